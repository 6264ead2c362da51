import Glibc

/// A value that only one thread at a time may touch, behind a pthread mutex.
///
/// It stands in for `Synchronization.Mutex`, with the same `withLock`, because on Linux that Mutex
/// takes its lock with atomics and futex calls inside the (uninstrumented) standard library, which
/// ThreadSanitizer cannot see: every access made under it is reported as a race (repro:
/// scripts/sanitizers/mutex-repro.swift). TSan intercepts `pthread_mutex_lock`, so it sees this lock, as it
/// sees swift-nio's `NIOLock`.
///
/// `@unchecked Sendable` is safe because the only stored state that changes, `value`, is read and
/// written only inside `withLock`, between `pthread_mutex_lock` and `pthread_mutex_unlock` on the
/// one mutex this instance owns; the mutex's address never changes (it is allocated apart from the
/// object) and it lives exactly as long as the object. As with `Mutex`, the value goes in and comes
/// out as `sending`, so a non-Sendable value cannot also be kept outside the lock.
public final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: sending Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(mutex, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deinitialize(count: 1)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock. Not reentrant: calling `withLock` on the
    /// same instance from inside `body` deadlocks, as with `Mutex`.
    public func withLock<Result, E: Error>(_ body: (inout sending Value) throws(E) -> sending Result) throws(E) -> sending Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
