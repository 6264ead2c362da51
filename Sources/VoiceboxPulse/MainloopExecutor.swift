import CPulse
import Dispatch
import Glibc
import VoiceboxThreads

/// The serial executor of an actor whose state libpulse's threaded mainloop guards. A job runs on
/// `queue` holding the mainloop lock; libpulse's callbacks run on the mainloop thread with that lock
/// held, so they are isolated to the actor as well (`checkIsolated`, which they reach through
/// `assumeIsolated`). The lock is what makes the two threads one serial context.
///
/// `@unchecked Sendable` is safe because `mainloop` is only handed to libpulse's lock, unlock,
/// in-thread, start, stop and free functions, which are thread-safe (free runs in `deinit`, once
/// nothing can use it); `queue` is Sendable and `holder` is a `Locked`.
final class MainloopExecutor: SerialExecutor, @unchecked Sendable {
    let mainloop: OpaquePointer
    let queue: DispatchQueue
    /// The thread that holds the lock for a job (or for `locked`), nil between them.
    private let holder = Locked<pthread_t?>(nil)

    init(name: String, label: String) throws(MainloopError) {
        guard let mainloop = pa_threaded_mainloop_new() else { throw MainloopError() }
        pa_threaded_mainloop_set_name(mainloop, name)
        self.mainloop = mainloop
        queue = DispatchQueue(label: label)
    }

    deinit {
        // Only reachable after the owner stopped (joined) the mainloop off its own thread.
        pa_threaded_mainloop_free(mainloop)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { self.locked { job.runSynchronously(on: self.asUnownedSerialExecutor()) } }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// (The runtime asks this where no Swift job of ours runs: a libpulse callback, a timer. It
    /// does so on Linux in its default, Swift 6 mode; SWIFT_IS_CURRENT_EXECUTOR_LEGACY_MODE_OVERRIDE
    /// set to legacy would make those `assumeIsolated` calls fail.)
    func checkIsolated() {
        let here = pthread_self()
        precondition(pa_threaded_mainloop_in_thread(mainloop) != 0 || holder.withLock { $0 == here },
                     "not on the PulseAudio mainloop thread nor holding its lock")
    }

    /// Runs `body` holding the mainloop lock. Never on the mainloop thread (it holds the lock
    /// already, and taking it again would deadlock).
    /// The lock is recursive: a `locked` inside another (a job that drops the last reference to
    /// an owner whose shutdown takes the lock) keeps the outer holder when it ends.
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        pa_threaded_mainloop_lock(mainloop)
        let outer = holder.withLock { holder in
            defer { holder = pthread_self() }
            return holder
        }
        defer {
            holder.withLock { $0 = outer }
            pa_threaded_mainloop_unlock(mainloop)
        }
        return try body()
    }

    /// Whether this is the mainloop thread (a libpulse callback, lock held).
    var onMainloopThread: Bool { pa_threaded_mainloop_in_thread(mainloop) != 0 }

    /// Starts the mainloop thread; false if it could not.
    func start() -> Bool { pa_threaded_mainloop_start(mainloop) >= 0 }

    /// Joins the mainloop thread: after it, no callback can come. Not holding the lock, not on
    /// the mainloop thread.
    func stop() { pa_threaded_mainloop_stop(mainloop) }

    /// The mainloop's event API, for contexts.
    var api: UnsafeMutablePointer<pa_mainloop_api> { pa_threaded_mainloop_get_api(mainloop) }

    struct MainloopError: Error {}
}

/// An actor on a `MainloopExecutor`: how libpulse's callbacks, the executor's timers and other
/// threads enter it.
protocol MainloopActor: Actor {
    nonisolated var executor: MainloopExecutor { get }
}

extension MainloopActor {
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Runs `work` in the actor from a libpulse callback (on the mainloop thread, lock held).
    nonisolated func fromCallback(_ work: (isolated Self) -> Void) {
        assumeIsolated(work)
    }

    /// Runs `work` in the actor soon, from anywhere (a cancellation, a deinit).
    nonisolated func soon(_ work: @escaping @Sendable (isolated Self) -> Void) {
        executor.queue.async { self.executor.locked { self.assumeIsolated(work) } }
    }

    /// Runs `work` in the actor before returning, from any thread: a libpulse callback already
    /// holds the lock (and taking it there would abort), anywhere else it is taken. Timers use it
    /// when they fire, so that their work is not queued behind later jobs.
    nonisolated func now(_ work: (isolated Self) -> Void) {
        if executor.onMainloopThread { return assumeIsolated(work) }
        executor.locked { assumeIsolated(work) }
    }

    /// The end of the actor's use of libpulse: joins the mainloop thread (off the lock, off that
    /// thread), after which no callback can come, then drops `retained`, the reference the
    /// callbacks' user data stood for.
    nonisolated func stopMainloop(thenRelease retained: Unmanaged<Self>?) {
        let executor = executor
        executor.queue.async {
            executor.stop()
            retained?.release()
        }
    }
}
