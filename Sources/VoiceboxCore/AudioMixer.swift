/// What the audio-session policy needs from the sound server: the streams playing and
/// recording now, their changes as they happen, and per-stream mute and volume. PulseAudio
/// (or pipewire-pulse) stands behind it in production (module VoiceboxPulse); tests script it.
///
/// One long-lived server connection; if the server goes away, `events` reports `.serverLost`
/// and the mixer reconnects by itself, reporting `.serverReady` (with fresh lists to read).
public protocol AudioMixer: Sendable {
    /// Every change, in the order the server reported it. Exactly one reader.
    var events: AsyncStream<MixerEvent> { get }

    /// What the server is and offers; throws `MixerError.unavailable` while it cannot be reached.
    func serverInfo() async throws -> SoundServerInfo

    /// Playback streams (sink inputs) now, and recording streams (source outputs) now.
    func playbackStreams() async throws -> [PlaybackStream]
    func recordingStreams() async throws -> [RecordingStream]

    /// Mutes or unmutes one playback stream. Throws `MixerError.noSuchStream` if it is gone.
    func setMute(_ stream: UInt32, _ muted: Bool) async throws
    /// Sets one playback stream's per-channel volume (`PlaybackStream.volume`'s scale).
    func setVolume(_ stream: UInt32, _ volume: [UInt32]) async throws

    /// Plays silence with `media.role` = `role` (one of `SoundServerInfo.roleCorkTriggers`) until
    /// `stopCorkTrigger`: while it plays, module-role-cork corks the streams of its target roles
    /// and asks their clients to pause. Returns the trigger stream's index (so the policy can
    /// tell it from a real call), once the server has it.
    func startCorkTrigger(role: String) async throws -> UInt32
    func stopCorkTrigger() async
}

public struct SoundServerInfo: Sendable, Equatable {
    /// e.g. "pulseaudio", "PulseAudio (on PipeWire 0.3.65)".
    public var name: String
    public var version: String
    /// pipewire-pulse: it never sends cork requests and has no role-based modules.
    public var isPipeWire: Bool
    /// module-role-cork is loaded: a stream of one of `roleCorkTriggers` playing makes the server
    /// mute the streams of `roleCorkTargets` and ask their clients to pause ("request-cork").
    public var roleCorkTriggers: [String]
    public var roleCorkTargets: [String]

    public init(name: String, version: String, isPipeWire: Bool, roleCorkTriggers: [String] = [], roleCorkTargets: [String] = []) {
        self.name = name
        self.version = version
        self.isPipeWire = isPipeWire
        self.roleCorkTriggers = roleCorkTriggers
        self.roleCorkTargets = roleCorkTargets
    }

    public var hasRoleCork: Bool { !roleCorkTriggers.isEmpty }
}

/// A sink input, as the session policy sees it.
public struct PlaybackStream: Sendable, Equatable, Identifiable {
    /// The server's index; unique while the stream lives.
    public var id: UInt32
    /// The server's index of the client that owns it.
    public var client: UInt32?
    /// `application.name`, `application.process.id`, `media.role`, `media.name`.
    public var applicationName: String?
    public var processID: Int32?
    public var role: String?
    public var mediaName: String?
    public var muted: Bool
    /// Per channel, on the server's scale: 65536 (PA_VOLUME_NORM) is 100 %, 0 is silence.
    public var volume: [UInt32]
    /// Paused by its own client (not playing).
    public var corked: Bool

    public init(id: UInt32, client: UInt32? = nil, applicationName: String? = nil, processID: Int32? = nil, role: String? = nil,
                mediaName: String? = nil, muted: Bool = false, volume: [UInt32] = [65536, 65536], corked: Bool = false) {
        self.id = id
        self.client = client
        self.applicationName = applicationName
        self.processID = processID
        self.role = role
        self.mediaName = mediaName
        self.muted = muted
        self.volume = volume
        self.corked = corked
    }
}

/// A source output (a recording), as the session policy sees it.
public struct RecordingStream: Sendable, Equatable, Identifiable {
    public var id: UInt32
    public var client: UInt32?
    public var applicationName: String?
    public var processID: Int32?
    public var role: String?
    public var corked: Bool

    public init(id: UInt32, client: UInt32? = nil, applicationName: String? = nil, processID: Int32? = nil, role: String? = nil,
                corked: Bool = false) {
        self.id = id
        self.client = client
        self.applicationName = applicationName
        self.processID = processID
        self.role = role
        self.corked = corked
    }
}

public enum MixerEvent: Sendable, Equatable {
    /// Connected (first time or again): read the lists afresh.
    case serverReady
    /// The server went away; the mixer is reconnecting.
    case serverLost(reason: String)
    case playbackChanged(PlaybackStream)
    case playbackRemoved(UInt32)
    case recordingChanged(RecordingStream)
    case recordingRemoved(UInt32)
}

public enum MixerError: Error, Sendable, Equatable {
    case unavailable(String)
    case noSuchStream(UInt32)
    case failed(String)
}
