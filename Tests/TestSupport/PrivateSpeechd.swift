import Foundation
import Glibc

/// A speech-dispatcher of the test's own, on its own socket, with the stack's configuration, so a
/// test may start it late, kill it or freeze it without disturbing the shared one. The one starter
/// for every test target that needs such a server.
public final class PrivateSpeechd: Sendable {
    public struct StartFailure: Error, CustomStringConvertible {
        public let description: String
    }

    public let directory: String
    public let socket: String
    public let config: String
    public var address: String { "unix_socket:" + socket }
    private var pidFile: String { directory + "/speechd.pid" }

    /// `config`: a configuration directory (the stack's `VOICEBOX_SPEECHD_CONFIG`).
    public init(config: String) throws {
        // Short path: a unix socket path must fit in 108 bytes.
        directory = "/tmp/vbsd-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory + "/log", withIntermediateDirectories: true)
        socket = directory + "/speechd.sock"
        self.config = config
    }

    deinit {
        stopEverything()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts it and returns once it accepts connections, within `timeout` seconds
    /// (speech-dispatcher -d returns after its modules are up).
    public func start(timeout: Double = 20) async throws {
        try? FileManager.default.removeItem(atPath: socket)
        try? FileManager.default.removeItem(atPath: pidFile)
        // -t 60: it exits after a minute without clients, so a server orphaned by a killed test run
        // does not linger.
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let launcher = try Subprocess("/usr/bin/speech-dispatcher",
                                      ["-d", "-t", "60", "-C", config, "-P", pidFile, "-S", socket, "-L", directory + "/log"],
                                      stdoutFD: devNull, stderrFD: devNull)
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while ContinuousClock.now < deadline {
            if launcher.poll() != nil, pid != nil, Self.accepts(socket) { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw StartFailure(description: "the test's speech-dispatcher did not come up within \(timeout) s; see \(directory)/log")
    }

    /// The server's pid, from its pid file (a server restarted with the same command line rewrites
    /// it); nil before a start and after `kill`.
    public var pid: pid_t? {
        guard let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
              let number = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), number > 1 else { return nil }
        return number
    }

    /// Kills it, like a crash by default (SIGKILL), and waits (5 s at most) until its socket
    /// refuses connections and the process is gone. False when there was nothing of ours to kill.
    @discardableResult
    public func kill(signal: Int32 = SIGKILL) -> Bool {
        guard let pid else { return false }
        // Only what we started: the daemon named in our own pid file, serving our socket.
        let command = (FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"))
            .map { String(decoding: $0, as: UTF8.self) } ?? ""
        guard command.contains("speech-dispatcher"), command.contains(socket), Glibc.kill(pid, signal) == 0 else { return false }
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, Self.accepts(socket) || (signal == SIGKILL && Glibc.kill(pid, 0) == 0) { usleep(10_000) }
        try? FileManager.default.removeItem(atPath: pidFile)
        try? FileManager.default.removeItem(atPath: socket)
        return true
    }

    /// Freezes it (SIGSTOP), as a wedged server looks: its socket stays open and nothing answers.
    public func freeze() {
        if let pid { Glibc.kill(pid, SIGSTOP) }
    }

    public func thaw() {
        if let pid { Glibc.kill(pid, SIGCONT) }
    }

    /// Every process started on this directory: the one we started, its output modules, and any
    /// server started in its place after a wedge (same socket, so its command line names the
    /// directory too).
    private var processes: [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry in
            guard let pid = pid_t(entry), pid != getpid(),
                  let line = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { return nil }
            return String(decoding: line, as: UTF8.self).contains(directory) ? pid : nil
        }
    }

    /// Kills every process started on this directory (tests call it once the service is stopped,
    /// which could otherwise start the server again after it was killed).
    public func stopEverything() {
        for pid in Set(processes + (pid.map { [$0] } ?? [])) {
            Glibc.kill(pid, SIGKILL)
            Glibc.kill(pid, SIGCONT)
        }
    }

    /// Whether a unix socket at `path` accepts a connection now.
    public static func accepts(_ path: String) -> Bool {
        let fd = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8.prefix(107))
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
    }
}
