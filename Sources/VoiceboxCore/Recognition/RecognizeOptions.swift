import VoiceboxContract

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
        /// Raw PCM the caller streams as it is produced (option `stream`).
        case stream(StreamInput)
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
    /// A stream with `silence_seconds`: it ends at the end of speech (the microphone always does).
    public var endsAtSilence = false

    public init() {}

    /// The options of a caller's Recognize, with every rule that depends on who calls:
    /// `callerSandbox` names the app sandbox the caller runs in (nil: none), and is asked only
    /// when the options name a file.
    public init(_ options: [String: OptionValue], callerSandbox: () async -> String?) async throws(VoiceboxError) {
        // A sandboxed app must not make the service a confused deputy that opens any file of the
        // user's: it passes the file itself, as desktop portals do.
        if options["file"] != nil, let sandbox = await callerSandbox() {
            throw VoiceboxError(.accessDenied, "a caller inside \(sandbox) cannot name a file: pass it open, as option fd (h)")
        }
        try self.init(options)
    }

    /// The options as such, for a caller outside any sandbox.
    public init(_ options: [String: OptionValue]) throws(VoiceboxError) {
        var reader = OptionReader(options)
        let file = try reader.string("file")
        let source = try reader.string("source")
        let descriptor = try reader.descriptor("fd")
        let stream = try Self.readStream(&reader)
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

        if let stream {
            guard file == nil, source == nil, descriptor == nil else {
                throw .invalidArgument("option 'stream' is the audio itself: not with 'file', 'fd' or 'source'")
            }
            if dictation != nil {
                throw .invalidArgument("option 'dictation' applies to the microphone only, not to a stream")
            }
            input = .stream(stream)
            self.maxSeconds = maxSeconds
            // Given, it ends the recognition at the end of speech, as the microphone's does;
            // absent, the stream is read as a file is, to its end. Others are left alone unless
            // `others` is given: a stream is not the microphone.
            self.silenceSeconds = silenceSeconds ?? 0
            endsAtSilence = silenceSeconds != nil
        } else {
            try readFileOrMicrophone(file: file, descriptor: descriptor, source: source, maxSeconds: maxSeconds,
                                     silenceSeconds: silenceSeconds, dictation: dictation)
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

    private mutating func readFileOrMicrophone(file: String?, descriptor: Int32?, source: String?, maxSeconds: Double?,
                                               silenceSeconds: Double?, dictation: Bool?) throws(VoiceboxError) {
        var file = file
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
    }

    /// `stream` and its companions; the companions without `stream` are an error.
    private static func readStream(_ reader: inout OptionReader) throws(VoiceboxError) -> StreamInput? {
        let descriptor = try reader.descriptor("stream")
        let format = try reader.string("stream_format")
        let rate = try reader.uint32("stream_rate", in: StreamInput.rates)
        let channels = try reader.uint32("stream_channels", in: 1...StreamInput.maximumChannels)
        let idle = try reader.double("stream_idle_seconds", in: StreamInput.idleSecondsRange)
        guard let descriptor else {
            let given = [("stream_format", format != nil), ("stream_rate", rate != nil), ("stream_channels", channels != nil),
                         ("stream_idle_seconds", idle != nil)].first { $0.1 }
            if let given { throw .invalidArgument("option '\(given.0)' describes option 'stream', which is missing") }
            return nil
        }
        var stream = StreamInput(descriptor: descriptor)
        if let format {
            guard let encoding = StreamInput.Encoding(rawValue: format) else {
                let known = StreamInput.Encoding.allCases.map(\.rawValue).joined(separator: ", ")
                throw .invalidArgument("option 'stream_format' must be one of \(known), not '\(format)'")
            }
            stream.encoding = encoding
        }
        if let rate { stream.rate = Int(rate) }
        if let channels { stream.channels = Int(channels) }
        if let idle { stream.idleSeconds = idle }
        return stream
    }

    public var isMicrophone: Bool {
        if case .microphone = input { true } else { false }
    }

    /// What the engine is asked for, with `language` replaced by the model's own tag.
    public func configuration(language resolved: String) -> RecognitionConfiguration {
        RecognitionConfiguration(language: resolved, grammar: grammar, keyphrases: keyphrases, hint: hint)
    }
}
