import Dispatch

/// A serial executor on a dispatch queue of its own. An actor that runs on one does its
/// synchronous CPU work (decoding speech) on that queue's thread, off Swift's small
/// cooperative pool, where a long decode would hold up every other task of the process.
final class QueueExecutor: SerialExecutor {
    private let queue: DispatchQueue

    init(label: String) {
        queue = DispatchQueue(label: label, qos: .userInitiated)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedSerialExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}
