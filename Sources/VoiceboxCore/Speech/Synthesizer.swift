import VoiceboxContract

/// What the service needs from a speech synthesizer. speech-dispatcher stands behind it in
/// production (module VoiceboxSpeechd); tests swap in a scripted one.
///
/// Utterance ids are chosen by the service and passed in, so an event can never arrive for an
/// utterance the service does not know yet.
public protocol Synthesizer: Sendable {
    /// Every begin, mark, end and connection change, in the order the engine reported them.
    /// There is exactly one stream per synthesizer; the service is its only reader.
    var events: AsyncStream<SynthesisEvent> { get }

    /// Queues one utterance. Returns once the engine accepted it (not when it was spoken).
    /// Throws `SynthesizerError.unavailable` when the engine cannot be reached.
    func speak(_ request: SynthesisRequest) async throws

    /// Stops these utterances, spoken or queued. Each ends with `.finished(id, .cancelled)`.
    func stop(_ ids: [UInt64]) async

    /// Pauses or resumes everything this service has queued.
    func pause() async throws
    func resume() async throws

    /// Every voice of every output module. Slowish: espeak-ng alone has thousands.
    /// Throws when the engine cannot be reached; may return [] while the engine starts up.
    func listVoices() async throws -> [Voice]
}

/// speech-dispatcher's priorities, with its semantics (see docs/speech.md).
public enum SpeechPriority: String, Sendable, CaseIterable {
    case message, important, text, notification, progress
}

public struct SynthesisRequest: Sendable, Equatable {
    public var id: UInt64
    public var text: String
    public var ssml: Bool
    public var priority: SpeechPriority
    /// A voice from `listVoices`, or nil for the engine's default for `language`.
    public var voice: Voice?
    /// BCP-47; nil means the engine's default language.
    public var language: String?
    /// 1.0 is normal; 0.25 ... 4.0.
    public var rate: Double
    /// 1.0 is normal; 0.5 ... 2.0.
    public var pitch: Double
    /// 0 ... 1; nil leaves the engine's default.
    public var volume: Double?

    public init(id: UInt64, text: String, ssml: Bool = false, priority: SpeechPriority = .message,
                voice: Voice? = nil, language: String? = nil, rate: Double = 1, pitch: Double = 1,
                volume: Double? = nil) {
        self.id = id
        self.text = text
        self.ssml = ssml
        self.priority = priority
        self.voice = voice
        self.language = language
        self.rate = rate
        self.pitch = pitch
        self.volume = volume
    }
}

public enum SynthesisEvent: Sendable, Equatable {
    case started(UInt64)
    case mark(UInt64, String)
    case finished(UInt64, SynthesisEnd)
    /// What went wrong with an utterance, just before its `.finished(id, .error)`: told to a caller
    /// waiting for it.
    case failed(UInt64, reason: String)
    /// The engine went away; every utterance in flight has already been finished with `.error`.
    case unavailable(reason: String)
    /// The engine is reachable (again): a good moment to refresh the voices.
    case available
}

public enum SynthesizerError: Error, Sendable, Equatable {
    /// The engine cannot be reached; the reason is for people.
    case unavailable(String)
    /// The engine refused the request (e.g. an unknown voice).
    case rejected(String)
}
