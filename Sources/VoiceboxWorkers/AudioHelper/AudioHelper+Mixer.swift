import VoiceboxContract
import VoiceboxCore

/// `AudioMixer`, one call to one request of the helper's (`AudioHelperProtocol.Call`).
extension AudioHelper {
    public func serverInfo() async throws -> SoundServerInfo {
        guard case .serverInfo(let info) = try await mixerCall(.serverInfo) else { throw Self.unexpected }
        return info
    }

    public func playbackStreams() async throws -> [PlaybackStream] {
        guard case .playbackStreams(let streams) = try await mixerCall(.playbackStreams) else { throw Self.unexpected }
        return streams
    }

    public func recordingStreams() async throws -> [RecordingStream] {
        guard case .recordingStreams(let streams) = try await mixerCall(.recordingStreams) else { throw Self.unexpected }
        return streams
    }

    public func setMute(_ stream: UInt32, _ muted: Bool) async throws {
        _ = try await mixerCall(.setMute(stream: stream, muted: muted))
    }

    public func setVolume(_ stream: UInt32, _ volume: [UInt32]) async throws {
        _ = try await mixerCall(.setVolume(stream: stream, volume: volume))
    }

    public nonisolated func attenuate(_ volume: [UInt32], byDecibels decibels: Double) -> [UInt32] {
        CubicVolume.attenuate(volume, byDecibels: decibels)
    }

    public func rememberedSettings() async throws -> [RememberedSetting] {
        guard case .rememberedSettings(let settings) = try await mixerCall(.rememberedSettings) else { throw Self.unexpected }
        return settings
    }

    public func remember(_ settings: [RememberedSetting]) async throws {
        _ = try await mixerCall(.remember(settings))
    }

    public func heldAsGiven(_ settings: [RememberedSetting]) async throws -> Set<String> {
        guard case .names(let names) = try await mixerCall(.heldAsGiven(settings)) else { throw Self.unexpected }
        return Set(names)
    }

    public func forgetRemembered(_ names: [String]) async throws {
        _ = try await mixerCall(.forgetRemembered(names))
    }

    public func startCorkTrigger(role: String) async throws -> UInt32 {
        guard case .index(let index) = try await mixerCall(.startCorkTrigger(role: role)) else { throw Self.unexpected }
        return index
    }

    public func stopCorkTrigger() async {
        _ = try? await mixerCall(.stopCorkTrigger)
    }

    private static var unexpected: MixerError { .failed("the audio helper answered something else") }

    /// The outcome of `call`; throws the mixer's error, `unavailable` while the helper cannot
    /// answer, `CancellationError` for a cancelled task.
    ///
    /// A call whose helper was lost is asked again of its replacement (`ask` waits for it): every
    /// one is idempotent
    /// (a mute, a volume, a memory entry set to a value; a list; a trigger, which died with the
    /// helper), and the audio session must be able to give back what it changed even when the
    /// helper it changed it through is gone.
    private func mixerCall(_ call: AudioHelperProtocol.Call) async throws -> AudioHelperProtocol.Outcome {
        var reply = await ask(call)
        // Asked again, after waiting for each replacement, while helpers die under it: twice more.
        // The audio session reads the streams before it gives back what it changed, and a read
        // that fails leaves it with what it knew before the helper went (which cannot show a
        // change the user made meanwhile).
        for _ in 0..<2 {
            guard case .lost = reply else { break }
            reply = await ask(call)
        }
        switch reply {
        case .outcome(.mixerError(let error)): throw error
        case .outcome(.captureError(let error)): throw MixerError.failed("\(error)")
        case .outcome(.badRequest(let why)): throw MixerError.failed("the audio helper could not read the request: \(why)")
        case .outcome(let outcome): return outcome
        case .unreachable(let why), .lost(let why): throw MixerError.unavailable(why)
        case .cancelled: throw CancellationError()
        }
    }
}
