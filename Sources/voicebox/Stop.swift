import VoiceboxBus
import VoiceboxContract

enum StopTarget: Equatable {
    /// What this client queued (nothing, from a new process: kept for scripts).
    case mine
    case utterance(UInt64)
    case all
}

extension Invocation {
    static func parseStop(_ reader: inout ArgumentReader) throws(UsageError) -> StopTarget {
        var target: StopTarget?
        while let item = reader.next() {
            switch item {
            case .flag("--all") where target == nil: target = .all
            case .operand(let text) where target == nil:
                guard let id = UInt64(text), id > 0 else { throw reader.error("stop takes an utterance id (a positive number), not '\(text)'") }
                target = .utterance(id)
            case .flag("--all"), .operand: throw reader.error("stop takes an utterance id or --all, not both")
            case .flag(let flag): throw reader.unknown(flag)
            }
        }
        return target ?? .mine
    }
}

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
