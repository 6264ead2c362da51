import Foundation
import XCTest

/// A PulseAudio of the test's own, in a temporary directory with its own socket, so it can be
/// killed and restarted without disturbing the shared server other tests use.
final class PrivatePulseServer {
    let directory: URL
    let configFile: URL
    var address: String { "unix:" + directory.appendingPathComponent("native").path }
    private var runtimeDirectory: URL { directory.appendingPathComponent("runtime") }
    private var pidFile: URL { runtimeDirectory.appendingPathComponent("pulse/pid") }
    private var pid: pid_t?

    /// `modules`: configuration lines after the native protocol (e.g. a source to record).
    init(modules: [String]) throws {
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("vbpulse-test-\(UUID().uuidString.prefix(8))")
        for sub in ["", "runtime", "home"] {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(sub),
                                                    withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        configFile = directory.appendingPathComponent("server.pa")
        let lines = ["load-module module-native-protocol-unix auth-anonymous=1 socket=\(directory.path)/native"] + modules
        try lines.joined(separator: "\n").appending("\n").write(to: configFile, atomically: true, encoding: .utf8)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts the server; returns once it accepts clients (a daemonizing PulseAudio returns
    /// only after its start-up).
    func start() throws {
        // Private runtime and home directories: root's PulseAudio would otherwise write into /root.
        let environment = ["XDG_RUNTIME_DIR": runtimeDirectory.path,
                           "HOME": directory.appendingPathComponent("home").path,
                           "PULSE_SERVER": address]
        let result = try runCommand(["pulseaudio", "-n", "-F", configFile.path, "--daemonize=yes",
                                     "--exit-idle-time=-1", "--system=no",
                                     "--log-target=file:\(directory.path)/pulse.log"],
                                    seconds: 10, environment: environment, captureOutput: false)
        let pidText = (try? String(contentsOf: pidFile, encoding: .utf8)) ?? ""
        guard result.status == 0, let pid = pid_t(pidText.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw CommandError(description: "private PulseAudio did not start (\(result.status)); see \(directory.path)/pulse.log")
        }
        self.pid = pid
    }

    /// Kills the server the hard way, as a crash would, and waits (bounded) until it is gone.
    func kill() {
        guard let pid else { return }
        self.pid = nil
        Foundation.kill(pid, SIGKILL)
        let deadline = Date().addingTimeInterval(5)
        while Foundation.kill(pid, 0) == 0, !Self.isZombie(pid), Date() < deadline { usleep(10_000) }
        // A stale pid file could make the next start think it is still running.
        try? FileManager.default.removeItem(at: pidFile)
    }

    private static func isZombie(_ pid: pid_t) -> Bool {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        return status.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") ?? true
    }
}
