import VoiceboxContract

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

    /// `volume` lowered (or raised) by `decibels` as heard: on the server's own (cubic) scale,
    /// with libpulse's conversions. The one place volume arithmetic is done.
    func attenuate(_ volume: [UInt32], byDecibels decibels: Double) -> [UInt32]

    /// What the server remembers of each application's and role's streams (PulseAudio's
    /// module-stream-restore, read with ext-stream-restore). Throws `MixerError.unsupported` where
    /// it cannot be read (see `SoundServerInfo.memory`).
    func rememberedSettings() async throws -> [RememberedSetting]
    /// Puts entries back into that memory as given (replacing what it holds for their names),
    /// without applying them to streams playing now. Returns once the server holds them.
    func remember(_ settings: [RememberedSetting]) async throws
    /// The names of `settings` the server holds as given now (pipewire-pulse: as it lists them, to
    /// its rounding): one read, no wait. Tells whether a write `remember` gave up waiting for has
    /// arrived since.
    func heldAsGiven(_ settings: [RememberedSetting]) async throws -> Set<String>
    /// Removes entries from that memory (where the server can: PulseAudio).
    func forgetRemembered(_ names: [String]) async throws

    /// Plays silence with `media.role` = `role` (one of `SoundServerInfo.roleCorkTriggers`) until
    /// `stopCorkTrigger`: while it plays, module-role-cork corks the streams of its target roles
    /// and asks their clients to pause. Returns the trigger stream's index (so the policy can
    /// tell it from a real call), once the server has it.
    func startCorkTrigger(role: String) async throws -> UInt32
    func stopCorkTrigger() async
}
