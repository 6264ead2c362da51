import Foundation
import Glibc
import VoiceboxThreads

/// A PulseAudio of the test's own (its own socket, runtime and home directories), so a test can
/// kill and restart it without disturbing the stack's server other tests use. The one starter for
/// every test target that needs such a server.
public final class PrivatePulseServer: Sendable {
    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
    }

    public let directory: String
    public var address: String { "unix:\(directory)/native" }
    private var pidFile: String { directory + "/runtime/pulse/pid" }
    private let pid = Locked<pid_t?>(nil)

    /// `modules`: configuration lines after the native protocol (a source to record, a sink).
    public init(modules: [String]) throws {
        directory = "/tmp/vbpulse-test-\(UUID().uuidString.prefix(8))"
        for sub in ["", "/runtime", "/home"] {
            try FileManager.default.createDirectory(atPath: directory + sub, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        let lines = ["load-module module-native-protocol-unix auth-anonymous=1 socket=\(directory)/native"] + modules
        try (lines.joined(separator: "\n") + "\n").write(toFile: directory + "/server.pa", atomically: true, encoding: .utf8)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts the server; returns once it accepts clients (a daemonizing PulseAudio returns only
    /// after its start-up), within 10 s.
    public func start() throws {
        // Private runtime and home directories: root's PulseAudio would otherwise write into /root;
        // no session bus, to keep it off the test bus.
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = directory + "/runtime"
        environment["HOME"] = directory + "/home"
        environment["PULSE_SERVER"] = address
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(directory)/no-bus"
        let starter = try Subprocess("/usr/bin/pulseaudio", ["-n", "-F", directory + "/server.pa", "--daemonize=yes",
                                                             "--exit-idle-time=-1", "--system=no",
                                                             "--log-target=file:\(directory)/pulse.log"],
                                     environment: environment)
        let status = starter.waitBlocking(seconds: 10)
        let pidText = (try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? ""
        guard status == 0, let started = pid_t(pidText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw StartFailure(description: "the test's PulseAudio did not start (\(status.map(String.init) ?? "timed out")); "
                                            + "see \(directory)/pulse.log")
        }
        pid.withLock { $0 = started }
    }

    /// Kills the server as a crash would, and waits (5 s at most) until it is gone.
    public func kill() {
        guard let pid = self.pid.withLock({ pid in defer { pid = nil }; return pid }) else { return }
        Glibc.kill(pid, SIGKILL)
        let deadline = Date().addingTimeInterval(5)
        while Glibc.kill(pid, 0) == 0, !Self.isZombie(pid), Date() < deadline { usleep(10_000) }
        // A stale pid file would make the next start think the server still runs.
        try? FileManager.default.removeItem(atPath: pidFile)
    }

    private static func isZombie(_ pid: pid_t) -> Bool {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        return status.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") ?? true
    }
}

extension Subprocess {
    /// Waits up to `seconds` for the exit, blocking the thread; nil if it still runs.
    public func waitBlocking(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let status = poll() { return status }
            usleep(5_000)
        }
        return poll()
    }
}
