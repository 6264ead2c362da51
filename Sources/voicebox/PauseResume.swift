import Foundation
import VoiceboxBus
import VoiceboxContract

extension Client {
    /// `pause`: a pause belongs to the caller and ends when it leaves the bus, so the pause is
    /// held while this runs: until Ctrl-C or SIGTERM, then it resumes and exits 0.
    func pause() async throws -> ExitStatus {
        let speech = speech
        try await checked { () async throws(DBusError) in try await speech.call(Speech1.pauseSpeaking) }
        if Output.isTerminal { Output.error("speech is paused until you press Ctrl-C") }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Interrupts.onInterrupt { _ in done.resume() }
        }
        _ = try? await speech.call(Speech1.resumeSpeaking, timeout: .seconds(2))
        return .ok
    }

    /// `resume`: releases this process's pause (kept for scripts; another process's pause ends
    /// when that process is interrupted).
    func resume() async throws -> ExitStatus {
        try await checked { () async throws(DBusError) in try await speech.call(Speech1.resumeSpeaking) }
        return .ok
    }
}
