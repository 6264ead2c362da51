@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads

/// A Synthesizer a test drives: it records what the service asks, reports begins and ends when
/// told to, and ends stopped utterances with `.cancelled` as the real one does.
final class ScriptedSynthesizer: Synthesizer {
    enum Command: Equatable {
        case speak(UInt64)
        case stop([UInt64])
        case pause
        case resume
    }

    let events: AsyncStream<SynthesisEvent>
    private let continuation: AsyncStream<SynthesisEvent>.Continuation
    private let state = Locked<(commands: [Command], requests: [SynthesisRequest], refusal: SynthesizerError?)>(([], [], nil))
    let voices: [Voice]

    init(voices: [Voice] = ScriptedSynthesizer.englishVoices) {
        (events, continuation) = AsyncStream.makeStream()
        self.voices = voices
    }

    static let englishVoices = [
        Voice(id: "espeak-ng/English (Great Britain)", name: "English (Great Britain)", language: "en-GB", variant: "none", engine: "espeak-ng"),
        Voice(id: "espeak-ng/English (America)", name: "English (America)", language: "en-US", variant: "none", engine: "espeak-ng"),
    ]

    var commands: [Command] { state.withLock { $0.commands } }
    var requests: [SynthesisRequest] { state.withLock { $0.requests } }

    /// The next speak() throws this.
    func refuseNext(_ error: SynthesizerError) { state.withLock { $0.refusal = error } }

    func report(_ event: SynthesisEvent) { continuation.yield(event) }

    func speak(_ request: SynthesisRequest) async throws {
        try state.withLock { state throws(SynthesizerError) in
            if let refusal = state.refusal {
                state.refusal = nil
                throw refusal
            }
            state.commands.append(.speak(request.id))
            state.requests.append(request)
        }
    }

    func stop(_ ids: [UInt64]) async {
        state.withLock { $0.commands.append(.stop(ids)) }
        for id in ids { continuation.yield(.finished(id, .cancelled)) }
    }

    func pause() async throws { state.withLock { $0.commands.append(.pause) } }
    func resume() async throws { state.withLock { $0.commands.append(.resume) } }
    func listVoices() async throws -> [Voice] { voices }
}
