import Dispatch
import VoiceboxCore

/// A short conversation with speech-dispatcher on a connection of its own (the voice listing, the
/// health probe): an actor on a queue of its own, so that opening the connection (which may block:
/// autospawn) holds up only this conversation, and the connection's readiness enters its isolation
/// (`SSIPConnection`, `WatchedSocket`), where the compiler keeps the connection. One per conversation.
actor SSIPConversation {
    private nonisolated let executor: QueueExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private var connection: SSIPConnection?

    init(label: String) {
        executor = QueueExecutor(label: label)
    }

    /// Talks on `opened`: `talk` sends its commands and calls `finish` once with the outcome; a
    /// connection that ends first gives `ended(reason)`. Either way the connection is then closed,
    /// saying QUIT if the socket takes it at once. Every reply is bounded by `timeout` seconds.
    func converse<Outcome: Sendable>(on opened: SSIPSocket.Opened, timeout: Double, ended: @escaping (String) -> Outcome,
                                     talk: (SSIPConnection, @escaping (Outcome) -> Void) -> Void) async -> Outcome {
        await withCheckedContinuation { (waiter: CheckedContinuation<Outcome, Never>) in
            let connection = SSIPConnection(opened, queue: executor.queue, timeout: timeout) { [weak self] event in
                self?.assumeIsolated { $0.connection?.handle(event) }
            }
            self.connection = connection
            var answered = false
            let finish = { (outcome: Outcome) in
                guard !answered else { return }
                answered = true
                connection.close(farewell: SSIPText.command("QUIT"))
                waiter.resume(returning: outcome)
            }
            connection.onClose = { finish(ended($0)) }
            talk(connection, finish)
        }
    }
}
