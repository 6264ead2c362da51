import VoiceboxContract
import VoiceboxCore

/// The sound server's streams and their mute and volume, through PulseAudio (or pipewire-pulse):
/// one long-lived connection that comes back by itself after the server went away.
///
/// Every wait on the server is bounded: `connectTimeout` to be connected (only while an attempt is
/// under way; while the server is known to be away, calls fail at once), then `requestTimeout`
/// for each answer. Either gives `MixerError.unavailable`. Idle, it costs no CPU: everything is
/// driven by the server's events and one-shot timers.
public final class PulseMixer: AudioMixer {
    private let connection: MixerConnection

    /// `server`: an address as libpulse takes it ("unix:/run/user/0/pulse/native"); nil follows
    /// the usual rules (PULSE_SERVER, client.conf, the per-user socket). Connecting starts at
    /// once; `events` says `.serverReady` when it is done.
    public init(server: String? = nil, applicationName: String = "Voicebox",
                requestTimeout: Duration = .seconds(2), connectTimeout: Duration = .seconds(2)) throws {
        connection = try MixerConnection(settings: .init(server: server, applicationName: applicationName,
                                                         requestTimeout: requestTimeout, connectTimeout: connectTimeout))
        try connection.start()
    }

    deinit {
        connection.shutdown()
    }

    /// Closes the connection for good (also done when the mixer is dropped): `events` finishes,
    /// waiting calls get `unavailable`, a cork trigger stops. The mainloop thread ends just after.
    public func shutdown() {
        connection.shutdown()
    }

    public var events: AsyncStream<MixerEvent> { connection.events }

    public func serverInfo() async throws -> SoundServerInfo { try await connection.serverInfo() }
    public func playbackStreams() async throws -> [PlaybackStream] { try await connection.playbackStreams() }
    public func recordingStreams() async throws -> [RecordingStream] { try await connection.recordingStreams() }
    public func setMute(_ stream: UInt32, _ muted: Bool) async throws { try await connection.setMute(stream, muted) }
    public func setVolume(_ stream: UInt32, _ volume: [UInt32]) async throws { try await connection.setVolume(stream, volume) }

    public func attenuate(_ volume: [UInt32], byDecibels decibels: Double) -> [UInt32] {
        PulseVolume.attenuate(volume, byDecibels: decibels)
    }

    public func rememberedSettings() async throws -> [RememberedSetting] {
        guard try await connection.serverInfo().memory == .readWrite else {
            throw MixerError.unsupported("the sound server does not tell what it remembers of streams")
        }
        return try await connection.rememberedSettings()
    }

    public func remember(_ settings: [RememberedSetting]) async throws {
        try await connection.remember(settings, memory: connection.serverInfo().memory)
    }

    public func heldAsGiven(_ settings: [RememberedSetting]) async throws -> Set<String> {
        guard try await connection.serverInfo().memory != .nothing else { return [] }
        return try await connection.heldAsGiven(settings)
    }

    public func forgetRemembered(_ names: [String]) async throws {
        guard try await connection.serverInfo().memory == .readWrite else { return }
        try await connection.forgetRemembered(names)
    }

    public func startCorkTrigger(role: String) async throws -> UInt32 {
        try await connection.startCorkTrigger(role: role)
    }

    public func stopCorkTrigger() async { await connection.stopCorkTrigger() }
}
