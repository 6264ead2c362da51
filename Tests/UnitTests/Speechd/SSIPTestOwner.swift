import Dispatch
import VoiceboxCore
@testable import VoiceboxSpeechd

/// Owns an SSIP connection as the service's owners do (`SpeechdCore`, `SSIPConversation`): an actor
/// on a `QueueExecutor` of the queue its socket is watched on, into which the socket's readiness
/// comes. A test reaches the connection with `sync`, from off the queue.
actor SSIPTestOwner {
    nonisolated let queue: DispatchQueue
    private nonisolated let executor: QueueExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private var connection: SSIPConnection?

    /// A connection on `descriptor`, the service's end of a socket pair (non-blocking).
    init(label: String, descriptor: Int32, timeout: Double) {
        let queue = DispatchQueue(label: label)
        self.queue = queue
        executor = QueueExecutor(queue: queue)
        sync(open: descriptor, timeout: timeout)
    }

    private nonisolated func sync(open descriptor: Int32, timeout: Double) {
        queue.sync {
            assumeIsolated { owner in
                owner.connection = SSIPConnection(.init(descriptor: descriptor, connecting: false), queue: owner.queue,
                                                  timeout: timeout) { [weak owner] event in
                    owner?.assumeIsolated { $0.connection?.handle(event) }
                }
            }
        }
    }

    /// Runs `body` with the connection on its queue, in the owner's isolation.
    nonisolated func sync<T: Sendable>(_ body: @Sendable (SSIPConnection) -> T) -> T {
        queue.sync { assumeIsolated { body($0.connection!) } }
    }
}
