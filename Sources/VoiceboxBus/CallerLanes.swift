import VoiceboxThreads

/// Runs each caller's calls one after another, in the order they came, while different callers'
/// calls run independently: a caller whose call is stuck holds up only itself.
///
/// A lane is the last task started for that caller; the next call's task waits for it. A lane
/// whose last call has finished is forgotten, so nothing is kept for callers that are idle.
final class CallerLanes: Sendable {
    private struct Tail {
        let token: UInt64
        let task: Task<Void, Never>
    }

    private let tails = Locked<(next: UInt64, bySender: [String: Tail])>((0, [:]))

    func run(for sender: String, _ work: @escaping @Sendable () async -> Void) {
        tails.withLock { tails in
            let previous = tails.bySender[sender]?.task
            let token = tails.next
            tails.next += 1
            let task = Task { [weak self] in
                await previous?.value
                await work()
                self?.finished(sender, token: token)
            }
            tails.bySender[sender] = Tail(token: token, task: task)
        }
    }

    /// How many callers have calls running or waiting: for tests.
    var busyCallers: Int { tails.withLock { $0.bySender.count } }

    private func finished(_ sender: String, token: UInt64) {
        tails.withLock { tails in
            if tails.bySender[sender]?.token == token { tails.bySender[sender] = nil }
        }
    }
}
