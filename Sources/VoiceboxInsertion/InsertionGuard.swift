import Foundation
import Glibc
import Synchronization

/// What holds for the length of one insertion, so that no words are lost to what happens meanwhile:
///
/// - One insertion at a time in the session. Two overlapping `xdotool` typings share the spare
///   keycodes (XKeymap): the first gives them back while the second still types with them, and
///   its characters are silently lost (measured: 31 of 33 non-ASCII characters). A lock file in
///   `$XDG_RUNTIME_DIR` (else /tmp, per user) orders them; the wait is bounded (`lockWait`).
/// - SIGINT, SIGTERM and SIGHUP do not end the process mid-text: they are noted, typing stops
///   between two chunks (`Typing`), the keymap is given back, and the caller keeps the text and
///   exits as the signal asked (`InsertionError.interrupted`). Killed at once, the helper program
///   typed on alone into whatever had the focus, and the text was lost.
public enum InsertionGuard {
    /// Another insertion may type a long dictation; past this, ours gives up and keeps its text.
    static let lockWait: Duration = .seconds(120)
    static let lockPoll: Duration = .milliseconds(50)

    /// The signal that asked the process to end during the insertion, 0 if none. Written by the
    /// signal handler, which may only touch a lock-free atomic.
    static let pendingSignal = Atomic<Int32>(0)
    static let watchedSignals: [Int32] = [SIGINT, SIGTERM, SIGHUP]

    /// Whether `holdSignals` has made the signals above noted for the rest of the process.
    static let held = Atomic<Bool>(false)

    /// Notes the signals above from now to the process's end instead of ending it: the text must
    /// be kept (clipboard, standard output) even when a second Ctrl-C comes while it is, and a
    /// signal before the insertion began counts as one during it. Called once the text is known.
    public static func holdSignals() {
        guard !held.exchange(true, ordering: .relaxed) else { return }
        pendingSignal.store(0, ordering: .relaxed)
        for number in watchedSignals { _ = noteSignal(number) }
    }

    /// Installs the handler that notes `number`; returns the one it replaced.
    private static func noteSignal(_ number: Int32) -> sigaction {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { InsertionGuard.pendingSignal.store($0, ordering: .relaxed) }
        sigemptyset(&action.sa_mask)
        var old = sigaction()
        sigaction(number, &action, &old)
        return old
    }

    /// Runs `body` holding the session's insertion lock, with the signals above noted instead of
    /// ending the process. A signal that came meanwhile (or, with `holdSignals`, since then) is
    /// thrown as `.interrupted` (unless `body` threw first).
    static func run<T>(environment: [String: String], _ body: () async throws(InsertionError) -> T) async throws(InsertionError) -> T {
        if !held.load(ordering: .relaxed) { pendingSignal.store(0, ordering: .relaxed) }
        var previous: [Int32: sigaction] = [:]
        for number in watchedSignals { previous[number] = noteSignal(number) }
        defer {
            for (number, old) in previous {
                var restore = old
                sigaction(number, &restore, nil)
            }
        }
        let lock = try acquireLock(environment)
        defer { close(lock) }  // closing the descriptor releases the lock
        let result = try await body()
        try checkInterrupted()
        return result
    }

    /// Throws `.interrupted` if a watched signal came: called between chunks of typing.
    static func checkInterrupted() throws(InsertionError) {
        let number = pendingSignal.load(ordering: .relaxed)
        if number != 0 { throw .interrupted(number) }
    }

    static func lockPath(_ environment: [String: String]) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/voicebox-insert.lock" }
        return "/tmp/voicebox-insert-\(getuid()).lock"
    }

    private static func acquireLock(_ environment: [String: String]) throws(InsertionError) -> Int32 {
        let path = lockPath(environment)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .failed("cannot open \(path): \(String(cString: strerror(errno)))") }
        let deadline = ContinuousClock.now + lockWait
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            guard errno == EWOULDBLOCK || errno == EINTR else {
                close(fd)
                throw .failed("cannot lock \(path): \(String(cString: strerror(errno)))")
            }
            let number = pendingSignal.load(ordering: .relaxed)
            if number != 0 {
                close(fd)
                throw .interrupted(number)
            }
            guard ContinuousClock.now < deadline else {
                close(fd)
                throw .failed("another insertion has held the keyboard for more than \(lockWait.components.seconds) s")
            }
            Xdotool.sleep(lockPoll)
        }
        return fd
    }
}
