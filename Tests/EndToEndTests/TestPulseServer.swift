import Foundation
import TestSupport
import Glibc

/// A PulseAudio of the test's own (its own socket and directories), with a sine-wave source as
/// the default source, so a test can kill and restart it without disturbing the stack's server.
final class TestPulseServer {
    let directory: String
    var address: String { "unix:\(directory)/native" }
    private var pid: pid_t?

    init() throws {
        directory = "/tmp/vbpulse-e2e-\(UUID().uuidString.prefix(8))"
        for sub in ["", "/runtime", "/home"] {
            try FileManager.default.createDirectory(atPath: directory + sub, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        }
        try """
            load-module module-native-protocol-unix auth-anonymous=1 socket=\(directory)/native
            load-module module-sine-source source_name=voicebox_sine rate=16000 frequency=440
            set-default-source voicebox_sine

            """.write(toFile: directory + "/server.pa", atomically: true, encoding: .utf8)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts the server; a daemonizing PulseAudio returns once it accepts clients.
    func start() throws {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = directory + "/runtime"
        environment["HOME"] = directory + "/home"
        environment["PULSE_SERVER"] = address
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(directory)/no-bus"  // keep it off the test bus
        let starter = try Subprocess("/usr/bin/pulseaudio", ["-n", "-F", directory + "/server.pa", "--daemonize=yes",
                                                             "--exit-idle-time=-1", "--system=no",
                                                             "--log-target=file:\(directory)/pulse.log"],
                                     environment: environment)
        let pidText = (try? String(contentsOfFile: directory + "/runtime/pulse/pid", encoding: .utf8)) ?? ""
        guard starter.waitBlocking(seconds: 10) == 0,
              let pid = pid_t((try? String(contentsOfFile: directory + "/runtime/pulse/pid", encoding: .utf8))?
                  .trimmingCharacters(in: .whitespacesAndNewlines) ?? pidText) else {
            throw ProgramError(description: "the test's PulseAudio did not start; see \(directory)/pulse.log")
        }
        self.pid = pid
    }

    /// Kills the server as a crash would, and waits (bounded) until it is gone.
    func kill() {
        guard let pid else { return }
        self.pid = nil
        Glibc.kill(pid, SIGKILL)
        for _ in 0..<500 where Glibc.kill(pid, 0) == 0 && !Self.isZombie(pid) { usleep(10_000) }
        // A stale pid file would make the next start think the server still runs.
        try? FileManager.default.removeItem(atPath: directory + "/runtime/pulse/pid")
    }

    private static func isZombie(_ pid: pid_t) -> Bool {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
        return status.split(separator: ")").last?.trimmingCharacters(in: .whitespaces).hasPrefix("Z") ?? true
    }
}

extension Subprocess {
    /// Waits up to `seconds` for the exit, blocking the thread; nil if it still runs.
    func waitBlocking(seconds: Double) -> Int32? {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let status = poll() { return status }
            usleep(5_000)
        }
        return poll()
    }
}
