import Foundation
import Glibc
import VoiceboxSpawn

/// A child process started with posix_spawn and reaped with waitpid, for tests.
///
/// Not Foundation's Process: started from a Swift concurrency thread it passes on that thread's
/// blocked signals (a dbus-daemon started so ignores SIGTERM and outlives the tests), and its
/// waitUntilExit can hang async tests.
public final class Subprocess: @unchecked Sendable {
    // @unchecked: `pid` is immutable and `status` is only touched under `lock`.
    public let pid: pid_t
    private let lock = NSLock()
    private var status: Int32?

    /// `stdoutFD`, `stderrFD`: where the child's output goes (nil: inherit).
    public init(_ path: String, _ arguments: [String], environment: [String: String]? = nil,
                stdoutFD: Int32? = nil, stderrFD: Int32? = nil) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdoutFD { posix_spawn_file_actions_adddup2(&actions, stdoutFD, 1) }
        if let stderrFD { posix_spawn_file_actions_adddup2(&actions, stderrFD, 2) }
        // A clean signal state, whatever the spawning thread blocks (CleanSpawn).
        let environment = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        switch CleanSpawn.spawn(path, arguments, actions: &actions, environment: environment) {
        case .success(let child): pid = child
        case .failure(let error): throw POSIXError(POSIXErrorCode(rawValue: error.code) ?? .EINVAL)
        }
    }

    /// The exit status (or 128+signal), nil while running.
    public func poll() -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        if let status { return status }
        var raw: Int32 = 0
        guard waitpid(pid, &raw, WNOHANG) == pid else { return nil }
        let signal = raw & 0x7f
        status = signal == 0 ? (raw >> 8) & 0xff : 128 + signal
        return status
    }

    /// Waits up to `timeout` for the exit; nil if it is still running.
    @discardableResult
    public func wait(timeout: Duration = .seconds(10)) async -> Int32? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let status = poll() { return status }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return poll()
    }

    public func signal(_ number: Int32) { if poll() == nil { kill(pid, number) } }

    deinit {
        if poll() == nil {
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            waitpid(pid, &raw, 0)
        }
    }
}
