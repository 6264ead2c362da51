// What the sound server is and holds, as the audio helper reports it to the service
// (AudioHelperProtocol) and the audio session reads it (VoiceboxCore's AudioMixer).

public struct SoundServerInfo: Sendable, Equatable, Codable {
    /// e.g. "pulseaudio", "PulseAudio (on PipeWire 0.3.65)".
    public var name: String
    public var version: String
    /// pipewire-pulse: it never sends cork requests and has no role-based modules.
    public var isPipeWire: Bool
    /// module-role-cork is loaded: a stream of one of `roleCorkTriggers` playing makes the server
    /// mute the streams of `roleCorkTargets` and ask their clients to pause ("request-cork").
    public var roleCorkTriggers: [String]
    public var roleCorkTargets: [String]
    /// What the server remembers of streams by application and role, and what of it we can reach.
    public var memory: ServerMemory

    public init(name: String, version: String, isPipeWire: Bool, roleCorkTriggers: [String] = [], roleCorkTargets: [String] = [],
                memory: ServerMemory = .nothing) {
        self.name = name
        self.version = version
        self.isPipeWire = isPipeWire
        self.roleCorkTriggers = roleCorkTriggers
        self.roleCorkTargets = roleCorkTargets
        self.memory = memory
    }

    public var hasRoleCork: Bool { !roleCorkTriggers.isEmpty }
}

/// The sound server's memory of stream settings: the volume and mute it gives the next stream of
/// an application or role, saved whenever a client changes a stream's (Voicebox included).
public enum ServerMemory: Sendable, Equatable, Codable {
    /// Nothing is remembered (PulseAudio without module-stream-restore).
    case nothing
    /// PulseAudio's module-stream-restore: ext-stream-restore reads, writes and deletes entries
    /// and reports each change (`MixerEvent.rememberedChanged`).
    case readWrite
    /// pipewire-pulse with WirePlumber's restore-stream: a write reaches WirePlumber's memory (through
    /// the "route-settings" metadata), a read lists only what clients wrote, a delete does nothing
    /// and no change is reported (measured on pipewire-pulse 0.3.65, WirePlumber 0.4.13).
    case writeOnly
}

/// One entry of the server's memory: what the next stream of an application or role starts with.
public struct RememberedSetting: Sendable, Codable, Equatable {
    /// PulseAudio's name for it, e.g. "sink-input-by-application-name:mpv", "sink-input-by-media-role:music".
    public var name: String
    public var muted: Bool
    /// Per channel, on `PlaybackStream.volume`'s scale; nil: no volume remembered.
    public var volume: [UInt32]?
    /// The channel positions of `volume` (pa_channel_position_t).
    public var channelMap: [UInt32]
    /// The device remembered for it, if any.
    public var device: String?

    public init(name: String, muted: Bool = false, volume: [UInt32]? = nil, channelMap: [UInt32] = [], device: String? = nil) {
        self.name = name
        self.muted = muted
        self.volume = volume
        self.channelMap = channelMap
        self.device = device
    }
}

/// A sink input, as the session policy sees it.
public struct PlaybackStream: Sendable, Equatable, Identifiable, Codable {
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
    /// The name of the server's memory entry it is saved under and started from (see
    /// `RememberedSetting`); nil if it has none.
    public var memoryKey: String?
    /// The channel positions of `volume` (pa_channel_position_t).
    public var channelMap: [UInt32]

    public init(id: UInt32, client: UInt32? = nil, applicationName: String? = nil, processID: Int32? = nil, role: String? = nil,
                mediaName: String? = nil, muted: Bool = false, volume: [UInt32] = [65536, 65536], corked: Bool = false,
                memoryKey: String? = nil, channelMap: [UInt32]? = nil) {
        self.id = id
        self.client = client
        self.applicationName = applicationName
        self.processID = processID
        self.role = role
        self.mediaName = mediaName
        self.muted = muted
        self.volume = volume
        self.corked = corked
        self.memoryKey = memoryKey
        self.channelMap = channelMap ?? (volume.count == 2 ? [1, 2] : Array(repeating: 0, count: volume.count))
    }
}

/// A source output (a recording), as the session policy sees it.
public struct RecordingStream: Sendable, Equatable, Identifiable, Codable {
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

public enum MixerEvent: Sendable, Equatable, Codable {
    /// Connected (first time or again): read the lists afresh.
    case serverReady
    /// The server went away; the mixer is reconnecting.
    case serverLost(reason: String)
    case playbackChanged(PlaybackStream)
    case playbackRemoved(UInt32)
    case recordingChanged(RecordingStream)
    case recordingRemoved(UInt32)
    /// The server's memory of stream settings changed (`ServerMemory.readWrite` only).
    case rememberedChanged
}

public enum MixerError: Error, Sendable, Equatable, Codable {
    case unavailable(String)
    case noSuchStream(UInt32)
    case failed(String)
    /// The server does not offer it.
    case unsupported(String)
}

/// Why a recording failed (`AudioCapture`, VoiceboxCore).
public enum CaptureError: Error, Sendable, Equatable, Codable {
    /// The named source does not exist (or went away), or there is no source at all.
    case noMicrophone(String)
    /// The sound server cannot be reached, or went away during the recording.
    case serverUnavailable(String)
    /// Anything else the server refused; the reason is for people.
    case failed(String)
}
