import Dispatch

/// Waits for a value another thread makes: `withCheckedContinuation`, with the value handed over
/// under a `Locked`, so that ThreadSanitizer sees the hand-over.
///
/// Why: CI's sanitizer pass reported bus replies, made by Marshalling on the bus thread, as racing
/// their read in the caller's task after a bare continuation (voiceboxd's ListNames reply, and the
/// tests' MPVPlayer). The continuation does not always tell TSan: the runtime's
/// `swift_continuation_await` returns on a fast path with no TSan acquire when the value came before
/// the task suspended. Rare: 10,000 concurrent calls under load did not reproduce it here. A pthread
/// mutex is an edge TSan always sees; outside TSan it costs one uncontended lock per call.
public func withHandOver<Value: Sendable>(isolation: isolated (any Actor)? = #isolation,
                                          _ start: (HandOver<Value>) -> Void) async -> Value {
    let slot = Locked<Value?>(nil)
    await withCheckedContinuation(isolation: isolation) { (arrived: CheckedContinuation<Void, Never>) in
        start(HandOver(slot: slot, arrived: arrived))
    }
    // Taken out, not copied: the slot may outlive this call on the other thread (the HandOver is
    // dropped there), and the value's last reference must not be freed there, after our reads.
    guard let value = slot.withLock({ slot in defer { slot = nil }; return slot }) else {
        preconditionFailure("a HandOver resumed without a value")
    }
    return value
}

/// The resuming end of `withHandOver`: resume it exactly once, as a continuation.
public struct HandOver<Value: Sendable>: Sendable {
    fileprivate let slot: Locked<Value?>
    fileprivate let arrived: CheckedContinuation<Void, Never>

    public func resume(returning value: Value) {
        slot.withLock { $0 = value }
        arrived.resume()
    }
}

/// Runs blocking `work` (a model load, a worker's start, an exchange bounded by a poll) on `queue`,
/// off Swift's small cooperative pool, where two such waits would hold up every other task, and
/// returns what it made or throws what it threw, handed over as `withHandOver` hands values over.
public func runBlocking<Value: Sendable>(on queue: DispatchQueue, isolation: isolated (any Actor)? = #isolation,
                                        _ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withHandOver(isolation: isolation) { (done: HandOver<Result<Value, any Error>>) in
        queue.async { done.resume(returning: Result { try work() }) }
    }.get()
}
