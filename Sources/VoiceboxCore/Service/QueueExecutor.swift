import Dispatch

/// A serial executor on a dispatch queue. An actor that runs on one does its blocking work (a
/// recognition's poll(2) on a caller's stream) on that queue's thread, off Swift's small cooperative pool, where a blocked job would hold up
/// every other task of the process; and an actor whose Dispatch sources and timers fire on that
/// queue reaches its state from their handlers with `assumeIsolated`, checked by `checkIsolated`
/// (the handlers run on the queue, not as Swift jobs).
public final class QueueExecutor: SerialExecutor {
    public let queue: DispatchQueue

    /// Tells `queue` from other queues on the thread running it (`isCurrent`).
    private let marker = DispatchSpecificKey<ObjectIdentifier>()

    public convenience init(label: String) {
        self.init(queue: DispatchQueue(label: label, qos: .userInitiated))
    }

    /// Runs jobs on `queue`, a serial queue the caller also hands to Dispatch sources and timers.
    public init(queue: DispatchQueue) {
        self.queue = queue
        queue.setSpecific(key: marker, value: ObjectIdentifier(self))
    }

    /// Whether the calling code runs on `queue` (a job, a source handler, a timer).
    public var isCurrent: Bool { DispatchQueue.getSpecific(key: marker) == ObjectIdentifier(self) }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Code running on `queue` (a Dispatch handler) is isolated to the actor; anything else traps.
    public func checkIsolated() {
        precondition(isCurrent, "not on \(queue.label)")
    }
}
