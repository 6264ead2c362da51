import VoiceboxBus
import VoiceboxContract
import VoiceboxCore
import VoiceboxWorkers

/// The parts that render speech into memory, shared by Speak's `output` and the Spiel provider:
/// speech-dispatcher's output modules in confined workers, and one queue for both.
struct Rendering {
    let renderer: OutputModules
    let queue: RenderQueue

    init(workerPath: String, bounds: Bounds) {
        renderer = OutputModules(workerPath: workerPath, bounds: bounds, log: { message in Daemon.log(message) })
        queue = RenderQueue(renderer: renderer)
    }
}

extension Daemon {
    /// Exports /org/voicebox/Speech/Provider and starts following the voices; nil (logged) if it
    /// cannot be exported, and the service goes on without it.
    static func startProvider(_ connection: BusConnection, speech: SpeechService, rendering: Rendering,
                              bus: SpeechObject) async -> (ProviderObject, SynthesisService)? {
        let synthesis = SynthesisService(voices: await speech.voices, renderer: rendering.renderer, queue: rendering.queue, bus: bus)
        let provider: ProviderObject
        do {
            provider = try ProviderObject(connection: connection, service: synthesis)
        } catch {
            log("cannot export \(SpeechProvider.objectPath): \(error.message)")
            return nil
        }
        await synthesis.start { voices in provider.publish(voices) }
        return (provider, synthesis)
    }

    /// Takes the provider's name once its voices are there, or after `wait` (the bound
    /// provider-voices: speech-dispatcher lists its 13,000 voices in about 1.2 s, each module is
    /// probed in about 50 ms). A Spiel client that activated the service by that name finds the
    /// voices when the name appears.
    static func claimProviderName(_ provider: (ProviderObject, SynthesisService)?, waitingAtMost wait: Duration) async {
        guard let (object, synthesis) = provider else { return }
        await synthesis.waitForVoices(atMost: wait)
        await object.claimName { message in log(message) }
    }
}
