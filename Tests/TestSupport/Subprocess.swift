import Foundation
import Glibc
import VoiceboxSpawn

/// A child process for tests, started and reaped by VoiceboxSpawn's `Child` (dropped while it runs,
/// it is killed).
///
/// Not Foundation's Process: started from a Swift concurrency thread it passes on that thread's
/// blocked signals (a dbus-daemon started so ignores SIGTERM and outlives the tests), and its
/// waitUntilExit can hang async tests.
public final class Subprocess: Sendable {
    public let pid: pid_t
    private let child: Child

    /// `stdinFD`: its input, `stdoutFD`, `stderrFD`: where its output goes (nil: inherit). `keeping`: descriptors
    /// it gets under their own numbers (dbus-daemon's --print-address=FD); it gets no other of ours.
    /// (It used to get them all: a speech-dispatcher a test started and that outlived the run kept
    /// the descriptor of the `flock` around `scripts/test`, and with it the shared CPU lock.)
    public init(_ path: String, _ arguments: [String], environment: [String: String]? = nil,
                stdinFD: Int32? = nil, stdoutFD: Int32? = nil, stderrFD: Int32? = nil, keeping: [Int32] = []) throws {
        var spec = ChildSpec(path, arguments,
                             environment: (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" })
        spec.standardInput = stdinFD.map { .descriptor($0) } ?? .inherit
        spec.standardOutput = stdoutFD.map { .descriptor($0) } ?? .inherit
        spec.standardError = stderrFD.map { .descriptor($0) } ?? .inherit
        for descriptor in keeping { spec.descriptors[descriptor] = descriptor }
        do {
            child = try Spawn.start(spec).child
        } catch {
            throw POSIXError(POSIXErrorCode(rawValue: error.errno.code) ?? .EINVAL)
        }
        pid = child.pid
    }

    /// The exit status (or 128+signal), nil while running.
    public func poll() -> Int32? { child.termination?.shellStatus }

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

    public func signal(_ number: Int32) { child.signal(number) }
}
