/// What the service needs from a speech recognizer. pocketsphinx stands behind it in production
/// (module VoiceboxPocketsphinx); tests swap in a scripted one. No C types cross this line.

/// Receives an engine's own messages, a line at a time (meant for a debug log).
public typealias LogSink = @Sendable (String) -> Void

/// What kind of speech to expect: it picks the search the engine runs.
public enum RecognitionHint: String, Sendable, CaseIterable {
    /// Free speech through the language's statistical language model.
    case dictation
    /// Short queries; pocketsphinx treats it like `dictation` (the same language model).
    case search
    /// A yes/no answer: the engine listens only for the words in `Confirmation`.
    case confirmation
}

public struct RecognitionConfiguration: Sendable, Equatable {
    /// BCP-47, compared case-insensitively. An engine may fall back to another region of the
    /// same language (e.g. "en-GB" to "en-US"); a language it has no model for is
    /// `RecognitionError.unsupportedLanguage`.
    public var language: String
    /// A JSGF grammar (the text, not a path); only sentences it accepts can be recognized.
    /// Its words must be in the language's dictionary. `import` statements are refused.
    public var grammar: String?
    /// Phrases to spot in running speech (keyword spotting) instead of transcribing it.
    /// Each is one or more dictionary words; the result lists only the spotted phrases.
    public var keyphrases: [String]?
    /// How readily a keyphrase is reported: a likelihood ratio, smaller spots more (and more
    /// falsely). 1 suits single distinctive words; long phrases want 1e-20 or lower.
    public var keyphraseThreshold: Double
    public var hint: RecognitionHint

    /// Whether the search is the language's statistical language model (dictation, search), the
    /// only one that needs it loaded; grammars, keyphrases and confirmations do not.
    public var usesLanguageModel: Bool { grammar == nil && keyphrases == nil && hint != .confirmation }

    public init(language: String = "en-US", grammar: String? = nil, keyphrases: [String]? = nil,
                keyphraseThreshold: Double = 1, hint: RecognitionHint = .dictation) {
        self.language = language
        self.grammar = grammar
        self.keyphrases = keyphrases
        self.keyphraseThreshold = keyphraseThreshold
        self.hint = hint
    }
}

public struct RecognizedWord: Sendable, Equatable {
    /// As spelled in the dictionary, without pronunciation variants ("read", not "read(2)").
    public var word: String
    /// Seconds since the first sample the decoder was given.
    public var start: Double
    public var end: Double
    /// 0...1: the engine's posterior probability of this word here (1 when it has none).
    public var confidence: Double

    public init(word: String, start: Double, end: Double, confidence: Double = 1) {
        self.word = word
        self.start = start
        self.end = end
        self.confidence = confidence
    }
}

public struct RecognitionResult: Sendable, Equatable {
    /// The words joined by single spaces; "" when nothing was recognized.
    public var text: String
    /// 0...1: how sure the engine is of `text` (see the engine for its mapping); 0 when `text`
    /// is empty.
    public var confidence: Double
    public var words: [RecognizedWord]

    public init(text: String, confidence: Double, words: [RecognizedWord]) {
        self.text = text
        self.confidence = confidence
        self.words = words
    }

    public static let empty = RecognitionResult(text: "", confidence: 0, words: [])
}

public protocol RecognitionEngine: Sendable {
    /// BCP-47 tags of the languages this engine has models for.
    var languages: [String] { get }

    /// A decoder for one stream of audio. The first call loads the model (a fraction of a
    /// second); the engine keeps it warm for later calls.
    /// Throws `RecognitionError` for a bad configuration or a model that fails to load.
    func makeDecoder(_ configuration: RecognitionConfiguration) async throws -> sending any SpeechDecoder
}

/// Decodes one stream of 16 kHz mono audio, utterance after utterance. Not thread-safe: use it
/// from one task, one call at a time. Each call is synchronous CPU work (pocketsphinx on the
/// project's 2-core machines: a third to a half of the audio's duration).
public protocol SpeechDecoder: AnyObject {
    /// Feeds samples (any count; 1024-4096 is a good chunk). The first call after `finish`
    /// begins a new utterance. Returns whether the engine's voice-activity detector hears
    /// speech at the end of these samples.
    func process(_ samples: UnsafeBufferPointer<Int16>) throws -> Bool

    /// The best guess so far for the current utterance, or nil before any words.
    func partial() -> String?

    /// Ends the utterance and returns what was said (`.empty` if nothing).
    func finish() throws -> RecognitionResult

    /// Ends the utterance without a result and forgets what the decoder adapted to from it,
    /// keeping what its voice-activity detector has learned about the background noise. For
    /// audio that is known not to be speech (see `detectorWarmUp`).
    func discard() throws

    /// Seconds of audio the voice-activity detector needs at the start of a stream to learn the
    /// background noise; what it calls speech before then may be the noise itself (pocketsphinx:
    /// it reports "speech" from about 0.1 s to 1-1.3 s after the start, whatever the noise level).
    var detectorWarmUp: Double { get }

    /// Seconds the voice-activity detector keeps reporting speech after speech has ended
    /// (pocketsphinx: 0.5). An endpointer waiting for trailing silence counts from the real end
    /// of speech by subtracting this.
    var speechEndDelay: Double { get }

    /// Ends, from any thread, a call of this decoder's that is waiting (for a decoder in another
    /// process that does not answer) and every later one: they throw at once. For a cancel, whose
    /// caller wants no answer; nil where calls never wait on anything (an in-process decoder).
    /// Does nothing once the decoder is gone.
    var interrupt: (@Sendable () -> Void)? { get }
}

public extension SpeechDecoder {
    var speechEndDelay: Double { 0 }
    var detectorWarmUp: Double { 0 }
    var interrupt: (@Sendable () -> Void)? { nil }
    func discard() throws { _ = try finish() }

    func process(_ samples: [Int16]) throws -> Bool {
        try samples.withUnsafeBufferPointer { try process($0) }
    }
}

public enum RecognitionError: Error, Sendable, Equatable {
    /// The grammar does not parse or names words the dictionary lacks; the parser's reason.
    case invalidGrammar(String)
    /// No model for this BCP-47 language.
    case unsupportedLanguage(String)
    /// A configuration or argument the engine cannot use, with the reason.
    case invalidArgument(String)
    /// The audio file cannot be read or decoded, with the path and the reason.
    case unreadableAudio(String)
    /// The caller's stream (option `stream`) is not what it must be: not a pipe or stream
    /// socket, an odd byte count, a sample that is not a number. The reason.
    case invalidStream(String)
    /// The engine itself failed (e.g. a model that does not load).
    case engineFailure(String)
}

/// The answers `RecognitionHint.confirmation` listens for, and what they mean.
public enum Confirmation {
    public static let affirmative = ["yes", "yeah", "yep", "sure", "correct", "right", "okay",
                                     "affirmative", "confirm"]
    // Not "nah": the en-US model hears it in most spoken "no"s.
    public static let negative = ["no", "nope", "wrong", "cancel", "stop", "negative"]

    /// true for a yes, false for a no, nil when the text holds neither or both.
    public static func interpret(_ text: String) -> Bool? {
        let words = Set(text.lowercased().split(separator: " ").map(String.init))
        let yes = !words.isDisjoint(with: affirmative)
        let no = !words.isDisjoint(with: negative)
        return yes == no ? nil : yes
    }
}
