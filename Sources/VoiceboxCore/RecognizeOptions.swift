/// The options of Recognize, checked. Everything a caller can get wrong is refused here, naming
/// the key, before a model, a file or the microphone is touched.
public struct RecognizeOptions: Sendable, Equatable {
    /// Where the audio comes from.
    public enum Input: Sendable, Equatable {
        /// A PulseAudio source by name, or nil for the default source.
        case microphone(source: String?)
        /// An absolute path to an audio file.
        case file(String)
        /// An audio file the caller opened and passed (option `fd`), as desktop portals pass files:
        /// open while the call lasts.
        case descriptor(Int32)
    }

    public static let defaultMicrophoneSeconds = 30.0
    public static let maximumSeconds = 86_400.0
    public static let maximumGrammarBytes = 65_536
    public static let maximumKeyphrases = 256

    public var input = Input.microphone(source: nil)
    public var language = "en-US"
    public var grammar: String?
    public var keyphrases: [String]?
    public var hint = RecognitionHint.dictation
    /// The longest stretch of audio to take; nil for none (a file's default: read it all).
    public var maxSeconds: Double? = defaultMicrophoneSeconds
    /// Trailing silence that ends a microphone utterance.
    public var silenceSeconds = 1.0
    public var partialResults = false
    /// What to do to other audio while listening (microphone only); nil: the service's default.
    public var others: OthersPolicy?
    /// A dictation (option `dictation`, microphone only): DictationID names it, so that keyboard
    /// shortcuts end only a dictation, never another program's recognition.
    public var dictation = false

    public init() {}

    public init(_ options: [String: OptionValue]) throws(VoiceboxError) {
        var reader = OptionReader(options)
        var file = try reader.string("file")
        let source = try reader.string("source")
        let descriptor = try reader.descriptor("fd")
        if let language = try reader.string("language") { self.language = language }
        grammar = try reader.string("grammar")
        keyphrases = try reader.strings("keyphrases")
        let hint = try reader.string("hint")
        let maxSeconds = try reader.double("max_seconds", in: 0.1...Self.maximumSeconds)
        let silenceSeconds = try reader.double("silence_seconds", in: 0...10)
        partialResults = try reader.bool("partial_results") ?? false
        others = try reader.othersPolicy()
        let dictation = try reader.bool("dictation")
        try reader.finish()

        if let descriptor {
            guard file == nil, source == nil else {
                throw .invalidArgument("option 'fd' is the audio itself: not with 'file' or 'source'")
            }
            file = "/proc/self/fd/\(descriptor)"  // checked below as a file is; opened as `descriptor`
        }
        switch (file, source) {
        case (.some, .some):
            throw .invalidArgument("options 'file' and 'source' contradict each other: a file or a microphone, not both")
        case (.some(let path), nil):
            // The daemon's working directory is not the caller's: a relative path would name another file.
            guard path.hasPrefix("/") else { throw .invalidArgument("option 'file' must be an absolute path, not '\(path)'") }
            input = descriptor.map { .descriptor($0) } ?? .file(path)
            if silenceSeconds != nil {
                throw .invalidArgument("option 'silence_seconds' applies to the microphone only, not to a file")
            }
            if others != nil {
                throw .invalidArgument("option 'others' applies to the microphone only, not to a file")
            }
            if dictation != nil {
                throw .invalidArgument("option 'dictation' applies to the microphone only, not to a file")
            }
            self.maxSeconds = maxSeconds
        case (nil, let source):
            if let source, source.isEmpty { throw .invalidArgument("option 'source' is empty: leave it out for the default source") }
            input = .microphone(source: source)
            self.maxSeconds = maxSeconds ?? Self.defaultMicrophoneSeconds
            self.silenceSeconds = silenceSeconds ?? 1.0
            self.dictation = dictation ?? false
        }
        guard LanguageTag.isWellFormed(language) else {
            throw .invalidArgument("option 'language' is not a BCP-47 tag: '\(language)'")
        }
        if let hint {
            guard let known = RecognitionHint(rawValue: hint) else {
                let names = RecognitionHint.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalidArgument("option 'hint' must be one of \(names), not '\(hint)'")
            }
            self.hint = known
        }
        try checkSearch()
    }

    /// The grammar, keyphrases and hint: one search, well formed, by the rules the engine
    /// applies too (`RecognitionConfiguration.checkSearch`), within the service's limits.
    private func checkSearch() throws(VoiceboxError) {
        do {
            try configuration(language: language)
                .checkSearch(maxGrammarBytes: Self.maximumGrammarBytes, maxKeyphrases: Self.maximumKeyphrases)
        } catch {
            throw error.optionError
        }
    }

    public var isMicrophone: Bool {
        if case .microphone = input { true } else { false }
    }

    /// What the engine is asked for, with `language` replaced by the model's own tag.
    public func configuration(language resolved: String) -> RecognitionConfiguration {
        RecognitionConfiguration(language: resolved, grammar: grammar, keyphrases: keyphrases, hint: hint)
    }
}
