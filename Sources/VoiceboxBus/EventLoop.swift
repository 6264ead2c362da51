import CDBus
import Glibc
import VoiceboxThreads

/// The one thread that touches a libdbus connection, and the work handed to it.
///
/// It sleeps in poll(2) on libdbus's watches, an eventfd for wake-ups, and the nearest
/// libdbus timeout: no polling interval, so an idle service uses no CPU at all.
final class EventLoop: Sendable {
    typealias Job = @Sendable (ConnectionState) -> Void

    private struct Queue {
        /// Each job with what to do instead if the loop has ended before running it.
        var jobs: [(job: Job, orElse: (@Sendable () -> Void)?)] = []
        var ended = false
    }

    private let queue = Locked(Queue())
    private let wakeFD: Int32

    init() {
        wakeFD = vb_wakeup_fd()
    }

    deinit { close(wakeFD) }

    /// Runs `job` on the loop thread, after every job submitted before it. If the loop has
    /// ended (the connection is closed), runs `orElse` instead, so no waiter is left hanging.
    func submit(_ job: @escaping Job, orElse: (@Sendable () -> Void)? = nil) {
        let accepted = queue.withLock { queue in
            guard !queue.ended else { return false }
            queue.jobs.append((job, orElse))
            return true
        }
        if accepted { wake() } else { orElse?() }
    }

    func wake() {
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
    }

    /// Starts the loop thread, which takes `state` with it: the compiler lets no other code keep
    /// it (libdbus's callbacks reach it through user-data pointers, and only run inside the
    /// libdbus calls that this thread makes).
    func start(name: String, state: sending ConnectionState) {
        OwnThread.start(name: name) { [self] in run(state) }
    }

    private func run(_ state: ConnectionState) {
        while !state.stopped {
            var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
            var watches: [OpaquePointer] = []
            for watch in state.watches where dbus_watch_get_enabled(watch) != 0 {
                let flags = dbus_watch_get_flags(watch)
                var events: Int16 = 0
                if flags & VB_WATCH_READABLE != 0 { events |= Int16(POLLIN) }
                if flags & VB_WATCH_WRITABLE != 0 { events |= Int16(POLLOUT) }
                fds.append(pollfd(fd: dbus_watch_get_unix_fd(watch), events: events, revents: 0))
                watches.append(watch)
            }
            let ready = poll(&fds, nfds_t(fds.count), state.quiet?.milliseconds(within: state.timeouts.millisecondsToNextDeadline())
                             ?? state.timeouts.millisecondsToNextDeadline())
            if ready < 0 && errno != EINTR {
                busLog("poll failed: \(String(cString: strerror(errno)))")
                break
            }
            state.quiet?.note(activity: ready > 0)
            if fds[0].revents != 0 {
                var count: UInt64 = 0
                _ = read(wakeFD, &count, 8)
            }
            for (index, watch) in watches.enumerated() {
                let revents = fds[index + 1].revents
                // Handling one watch may have removed another.
                guard revents != 0, state.watches.contains(watch) else { continue }
                var flags: UInt32 = 0
                if revents & Int16(POLLIN) != 0 { flags |= VB_WATCH_READABLE }
                if revents & Int16(POLLOUT) != 0 { flags |= VB_WATCH_WRITABLE }
                if revents & Int16(POLLERR) != 0 { flags |= VB_WATCH_ERROR }
                if revents & Int16(POLLHUP) != 0 { flags |= VB_WATCH_HANGUP }
                dbus_watch_handle(watch, flags)
            }
            state.timeouts.fireDue()
            for entry in queue.withLock({ queue in defer { queue.jobs = [] }; return queue.jobs }) {
                entry.job(state)
            }
            state.dispatchIncoming()
        }
        state.shutDown()
        let leftovers = queue.withLock { queue in
            queue.ended = true
            defer { queue.jobs = [] }
            return queue.jobs
        }
        for entry in leftovers { entry.orElse?() }
    }
}

/// libdbus's timeouts, each with the time it is next due.
final class TimeoutTable {
    private var deadlines: [OpaquePointer: ContinuousClock.Instant] = [:]

    func add(_ timeout: OpaquePointer) { reset(timeout) }
    func remove(_ timeout: OpaquePointer) { deadlines[timeout] = nil }

    func reset(_ timeout: OpaquePointer) {
        deadlines[timeout] = .now + .milliseconds(Int(dbus_timeout_get_interval(timeout)))
    }

    /// -1 (sleep until woken) when nothing is due.
    func millisecondsToNextDeadline() -> Int32 {
        let now = ContinuousClock.now
        var nearest: Duration?
        for (timeout, deadline) in deadlines where dbus_timeout_get_enabled(timeout) != 0 {
            let left = max(deadline - now, .zero)
            nearest = min(nearest ?? left, left)
        }
        guard let nearest else { return -1 }
        return Self.milliseconds(nearest)
    }

    /// poll(2)'s timeout for `duration`, rounded up, so we never wake a moment too early and spin.
    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(min(seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000, 86_400_000))
    }

    func fireDue() {
        let now = ContinuousClock.now
        let due = deadlines.filter { $0.value <= now }.map(\.key)
        for timeout in due where deadlines[timeout] != nil && dbus_timeout_get_enabled(timeout) != 0 {
            // libdbus timeouts repeat until removed or disabled.
            reset(timeout)
            dbus_timeout_handle(timeout)
        }
    }
}

/// An action run once the loop has slept `delay` without traffic after some: armed by activity,
/// never by time alone, so an idle loop still sleeps without a timeout.
final class QuietWatch {
    let delay: Duration
    let action: @Sendable () -> Void
    private var deadline: ContinuousClock.Instant?

    init(delay: Duration, action: @escaping @Sendable () -> Void) {
        self.delay = delay
        self.action = action
    }

    /// poll's timeout: `other` (libdbus's, -1 for none) or the quiet deadline, whichever is nearer.
    func milliseconds(within other: Int32) -> Int32 {
        guard let deadline else { return other }
        let mine = TimeoutTable.milliseconds(max(deadline - .now, .zero))
        return other < 0 ? mine : min(other, mine)
    }

    /// After each poll: traffic (re)arms the deadline; a deadline passed without traffic runs the action.
    func note(activity: Bool) {
        if activity {
            deadline = .now + delay
        } else if let deadline, deadline <= .now {
            self.deadline = nil
            action()
        }
    }
}

func busLog(_ message: String) {
    var line = "voicebox-bus: " + message + "\n"
    line.withUTF8 { _ = write(2, $0.baseAddress, $0.count) }
}
