import VoiceboxBus
import VoiceboxInterface

extension Client {
    /// `stop [ID]`, `stop --all`.
    func stop(_ target: StopTarget) async throws -> ExitStatus {
        try await checked { () async throws(DBusError) in
            switch target {
            case .all: try await speech.call(Speech1.stopAllSpeaking)
            case .utterance(let id): try await speech.call(Speech1.stopSpeaking, id)
            case .mine: try await speech.call(Speech1.stopSpeaking, 0)
            }
        }
        return .ok
    }
}
