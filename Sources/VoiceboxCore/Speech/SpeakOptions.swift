import VoiceboxContract

/// The options of Speak, checked.
public struct SpeakOptions: Sendable, Equatable {
    public var voice: String?
    public var language: String?
    public var rate: Double = 1
    public var pitch: Double = 1
    public var volume: Double?
    public var ssml = false
    public var priority: SpeechPriority = .message
    public var wait = false
    /// What to do to other audio while speaking; nil: the service's default.
    public var others: OthersPolicy?
    /// Write the utterance as a WAV file into this descriptor (the caller's, open for the call)
    /// instead of playing it.
    public var output: Int32?

    public init() {}

    public init(_ options: [String: OptionValue]) throws(VoiceboxError) {
        var reader = OptionReader(options)
        voice = try reader.string("voice")
        language = try reader.string("language")
        rate = try reader.double("rate", in: 0.25...4) ?? 1
        pitch = try reader.double("pitch", in: 0.5...2) ?? 1
        volume = try reader.double("volume", in: 0...1)
        ssml = try reader.bool("ssml") ?? false
        if let name = try reader.string("priority") {
            guard let priority = SpeechPriority(rawValue: name) else {
                let known = SpeechPriority.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalidArgument("option 'priority' must be one of \(known), not '\(name)'")
            }
            self.priority = priority
        }
        wait = try reader.bool("wait") ?? false
        others = try reader.othersPolicy()
        output = try reader.descriptor("output")
        try reader.finish()
        if output != nil && others != nil {
            throw .invalidArgument("option 'others' says what happens to other audio while speech plays: with 'output' nothing plays")
        }
        if voice != nil && language != nil {
            throw .invalidArgument("options 'voice' and 'language' contradict each other: give one")
        }
        if let language, !LanguageTag.isWellFormed(language) {
            throw .invalidArgument("option 'language' is not a BCP-47 tag: '\(language)'")
        }
    }
}
