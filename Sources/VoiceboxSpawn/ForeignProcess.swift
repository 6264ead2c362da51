import Glibc

/// A process this one did not start (another program's server): it cannot be reaped here, but its
/// end can be waited for through a pidfd, which Linux gives for any process of the same user.
public enum ForeignProcess {
    /// Whether `pid` has ended within `timeout` (a zombie counts as ended), sleeping in poll(2) on
    /// its pidfd; without pidfds (Linux before 5.3), looking at /proc every 10 ms, bounded all the same.
    public static func waitForExit(_ pid: pid_t, timeout: Duration) -> Bool {
        let deadline = ContinuousClock.now + timeout
        let pidfd = Child.openPidfd(pid)
        defer { if pidfd >= 0 { close(pidfd) } }
        while isRunning(pid) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            if pidfd >= 0 {
                var entry = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
                _ = poll(&entry, 1, Child.milliseconds(left))
            } else {
                usleep(UInt32(min(10_000, Child.milliseconds(left) * 1000)))
            }
        }
        return true
    }

    /// Running, neither gone nor a zombie (/proc/PID/stat's state).
    public static func isRunning(_ pid: pid_t) -> Bool {
        guard let state = state(of: pid) else { return false }
        return state != UInt8(ascii: "Z")
    }

    /// Stopped by a signal or a tracer (state `T` or `t`): it does nothing until continued, and
    /// nothing sent to it but SIGCONT or SIGKILL is acted on.
    public static func isStopped(_ pid: pid_t) -> Bool {
        let state = state(of: pid)
        return state == UInt8(ascii: "T") || state == UInt8(ascii: "t")
    }

    /// /proc/PID/stat's state letter, after the command name (which may hold spaces and ")");
    /// nil when the process is gone. Any process's, ours or not.
    private static func state(of pid: pid_t) -> UInt8? {
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0, let close = buffer[0..<count].lastIndex(of: UInt8(ascii: ")")), close + 2 < count else { return nil }
        return buffer[close + 2]
    }
}
