import Dispatch
import Glibc
import VoiceboxThreads

/// A started child process: watched through its pidfd, reaped exactly once, its end decoded once.
///
/// Only this object reaps the child, and it signals it only while it is not reaped, both under one
/// lock, so a signal can never reach a process that took the pid over. Dropping a child that still
/// runs kills it with SIGKILL and reaps it.
public final class Child: Sendable {
    public let pid: pid_t
    /// The pidfd (Linux 5.3, glibc 2.36), -1 without one; readable once the child has exited.
    private let pidfd: Int32
    /// How it ended, once it has been reaped.
    private let reaped = Locked<Termination?>(nil)

    init(pid: pid_t) {
        self.pid = pid
        pidfd = Self.openPidfd(pid)
    }

    deinit {
        let unreaped = reaped.withLock { $0 == nil }
        if unreaped {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            // Bounded in practice: SIGKILL cannot be refused; the kernel ends the process at once.
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
        if pidfd >= 0 { close(pidfd) }
    }

    /// How it ended, if it has; never blocks.
    public var termination: Termination? {
        reaped.withLock { state in
            if let state { return state }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { state = Termination(waitStatus: status) }
            if result < 0 && errno == ECHILD { state = .unknown }
            return state
        }
    }

    /// Sends `number` unless the child has already been reaped.
    public func signal(_ number: Int32) {
        reaped.withLock { state in
            if state == nil { kill(pid, number) }
        }
    }

    /// Waits at most `timeout` for the child to end, sleeping in poll(2) on its pidfd (woken by
    /// the exit itself); nil if it still runs then.
    public func wait(timeout: Duration) -> Termination? {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let ended = termination { return ended }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return nil }
            if pidfd >= 0 {
                var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
                _ = poll(&entry, 1, Self.milliseconds(left))  // EINTR: around again
            } else {
                // No pidfd (Linux before 5.3): look again every 2 ms, bounded all the same.
                usleep(UInt32(min(2000, Self.milliseconds(left) * 1000)))
            }
        }
    }

    /// Waits at most `timeout` for the child to end by itself, then kills it (SIGKILL) and reaps
    /// it. `killed` says whether it had to be.
    public func end(within timeout: Duration) -> (termination: Termination, killed: Bool) {
        if let ended = wait(timeout: timeout) { return (ended, false) }
        signal(SIGKILL)
        // A killed process is gone within milliseconds; 5 s covers one stuck in the kernel a while.
        return (wait(timeout: .seconds(5)) ?? .unknown, true)
    }

    /// Waits for the end at most `bound`, then kills it (SIGKILL) and waits up to 5 s more, as
    /// `end(within:)` does, but holding no thread: the pidfd is watched by Dispatch (`exited`).
    /// `killed` says whether it had to be.
    public func reaped(within bound: Duration) async -> (termination: Termination, killed: Bool) {
        if let ended = await exit(within: bound) { return (ended, false) }
        signal(SIGKILL)
        // A killed process is gone within milliseconds; 5 s covers one stuck in the kernel a while.
        return (await exit(within: .seconds(5)) ?? .unknown, true)
    }

    /// How it ended, if it does within `bound`: whichever comes first, its end or the bound.
    private func exit(within bound: Duration) async -> Termination? {
        if let ended = termination { return ended }
        let (ends, end) = AsyncStream.makeStream(of: Termination?.self)
        // The watch lasts until the child ends (at once after SIGKILL); the first answer counts.
        Task { end.yield(await exited()) }
        let timer = Task {
            try? await Task.sleep(for: bound)
            end.yield(nil)
        }
        var first = ends.makeAsyncIterator()
        let ended = await first.next() ?? nil
        timer.cancel()
        end.finish()
        return ended
    }

    /// Waits for the end without holding a thread: a dispatch source on the pidfd, which keeps the
    /// child (and so its pidfd open) until Dispatch has let go of it. Unbounded by design (it is a watch: the caller bounds what it waits for, e.g. with `end(within:)`).
    public func exited() async -> Termination {
        if let ended = termination { return ended }
        guard pidfd >= 0 else {
            while true {
                try? await Task.sleep(for: .milliseconds(10))
                if let ended = termination { return ended }
            }
        }
        return await withCheckedContinuation { continuation in
            let source = DispatchSource.makeReadSource(fileDescriptor: pidfd, queue: .global())
            let resumed = Locked(false)
            source.setEventHandler { [self] in
                guard let ended = termination else { return }
                let first = resumed.withLock { done in
                    defer { done = true }
                    return !done
                }
                guard first else { return }
                source.cancel()
                continuation.resume(returning: ended)
            }
            // Dispatch wants the pidfd open until the source is cancelled; `deinit` closes it, so
            // the child is kept until then.
            source.setCancelHandler { [self] in _ = pidfd }
            source.activate()
        }
    }

    static func openPidfd(_ pid: pid_t) -> Int32 {
        typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_open") else { return -1 }
        let descriptor = unsafeBitCast(symbol, to: PidfdOpen.self)(pid, 0)
        if descriptor >= 0 { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        return descriptor
    }

    /// A poll(2) timeout for `duration`: whole milliseconds rounded up, at most a day.
    public static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, duration > .zero else { return 0 }
        return Int32(min(86_400_000, seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000))
    }
}
