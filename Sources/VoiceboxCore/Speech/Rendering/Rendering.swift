/// Speech rendered into memory instead of played: what Speak's `output` and the Spiel provider's
/// Synthesize need from an engine (`SpeechRenderer`), and what they hand it.

/// An engine (a speech-dispatcher output module) that renders into memory, as probed.
public struct RenderEngine: Sendable, Hashable {
    /// The output module, as `Voice.engine` names it (e.g. "espeak-ng").
    public let name: String
    /// Its samples: signed 16-bit little-endian at this rate and channel count.
    public let sampleRate: Int
    public let channels: Int
    /// Whether it reports SSML marks (and so words and sentences, through the marks of `SpeechMarkup`).
    public let reportsMarks: Bool
    /// The Spiel voice features its voices are offered with (`SpielFeatures`).
    public let features: UInt64

    public init(name: String, sampleRate: Int, channels: Int, reportsMarks: Bool, features: UInt64) {
        self.name = name
        self.sampleRate = sampleRate
        self.channels = channels
        self.reportsMarks = reportsMarks
        self.features = features
    }
}

/// One utterance to render.
public struct RenderRequest: Sendable, Equatable {
    public var id: UInt64
    /// The output module and what it is set to: a language (BCP-47) and a voice of it (as
    /// `Voice.name`), nil for the module's default.
    public var engine: String
    public var language: String?
    public var voiceName: String?
    public var markup: SpeechMarkup
    /// A factor of the engine's normal speed (1 is normal); the renderer knows its engine's scale.
    public var rate: Double
    /// The module's own numbers, -100 ... 100 (0: the voice's own).
    public var pitch: Int
    public var volume: Int

    public init(id: UInt64, engine: String, language: String?, voiceName: String?, markup: SpeechMarkup,
                rate: Double = 1, pitch: Int = 0, volume: Int = 0) {
        self.id = id
        self.engine = engine
        self.language = language
        self.voiceName = voiceName
        self.markup = markup
        self.rate = rate
        self.pitch = pitch
        self.volume = volume
    }
}

/// How the audio is written into the caller's descriptor.
public enum RenderEncoding: Sendable, Equatable {
    /// `audio/x-spiel`: header, audio chunks and events (`SpielStream`).
    case spiel
    /// Headerless PCM, as the voice's caps say.
    case raw
    /// A WAV file (`WAVHeader`); `seekable`: its sizes are written in at the end.
    case wav(seekable: Bool)
}

/// Where the rendering goes: a descriptor that is ours (a duplicate of the caller's, closed when
/// the rendering ends), and how it is written.
public struct RenderTarget: Sendable {
    public let descriptor: OutputDescriptor
    public let encoding: RenderEncoding

    public init(descriptor: OutputDescriptor, encoding: RenderEncoding) {
        self.descriptor = descriptor
        self.encoding = encoding
    }
}

/// What happens to a rendering, in order: `began` at its first audio written, `mark` for each of
/// the caller's marks once the audio before it is written, then one `finished`.
public enum RenderEvent: Sendable, Equatable {
    case began
    case mark(String)
    /// The engine has rendered all of it and is free for another caller; what is left is written
    /// from memory as the reader takes it.
    case engineReleased
    case finished(RenderEnd)
}

public enum RenderEnd: Sendable, Equatable {
    /// Written to its end.
    case done
    /// Stopped by us (`RenderHandle.cancel`).
    case cancelled
    /// The reader closed its end of the pipe: its way of cancelling.
    case readerGone
    /// The engine failed, or the descriptor could not be written; the reason is for people.
    case failed(String)
}

/// A rendering under way.
public protocol RenderHandle: Sendable {
    /// Stops it at once; its `finished(.cancelled)` follows (unless it had ended already).
    func cancel()
}

/// What renders speech into memory: in voiceboxd, speech-dispatcher's own output modules run in
/// confined processes (VoiceboxWorkers' `OutputModules`); tests script one.
public protocol SpeechRenderer: Sendable {
    /// What speech-dispatcher speaks with when no voice is named: its configuration's
    /// DefaultModule and DefaultLanguage.
    var defaultEngine: String { get }
    var defaultLanguage: String { get }

    /// The engines among `names` that render into memory, probed once each (bounded); the others
    /// are left out.
    func engines(among names: Set<String>) async -> [RenderEngine]

    /// Starts rendering `request` into `target`; `events` comes from another thread, in order, and
    /// always ends with one `finished` (the target's descriptor is closed by then).
    func render(_ request: RenderRequest, into target: RenderTarget,
                events: @escaping @Sendable (RenderEvent) -> Void) -> any RenderHandle
}

/// The voice features of org.freedesktop.Speech.Provider (its XML's VOICE_FEATURE flags).
public enum SpielFeatures {
    public static let eventsWord: UInt64 = 0x1
    public static let eventsSentence: UInt64 = 0x2
    public static let eventsSSMLMark: UInt64 = 0x8
    public static let sayAsCharacters: UInt64 = 0x80
    public static let ssmlBreak: UInt64 = 0x1000
    public static let ssmlSub: UInt64 = 0x2000
    public static let ssmlEmphasis: UInt64 = 0x8000
    public static let ssmlProsody: UInt64 = 0x10000
    public static let ssmlSentenceParagraph: UInt64 = 0x20000
}
