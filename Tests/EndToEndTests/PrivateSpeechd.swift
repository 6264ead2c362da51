import Foundation
import Glibc
import TestSupport

/// A speech-dispatcher of the test's own, on its own socket, so a test may start it late or
/// kill it without disturbing the shared one.
final class PrivateSpeechd: Sendable {
    let directory: String
    let socket: String
    let config: String
    var address: String { "unix_socket:" + socket }
    private var pidFile: String { directory + "/speechd.pid" }

    init(config: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-speechd-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        socket = directory + "/speechd.sock"
        self.config = config
    }

    /// Starts it and returns once it answers (speech-dispatcher -d returns after its modules are up).
    func start() async throws {
        let process = try Subprocess("/usr/bin/speech-dispatcher", ["-d", "-t", "0", "-C", config, "-S", socket, "-P", pidFile])
        guard await process.wait(timeout: .seconds(20)) == 0 else { throw POSIXError(.ECHILD) }
        try await waitUntil("speech-dispatcher's socket") { FileManager.default.fileExists(atPath: self.socket) }
    }

    var pid: pid_t? {
        (try? String(contentsOfFile: pidFile, encoding: .utf8)).flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// Kills it hard (as a crash would) and waits until it is gone.
    func kill() async throws {
        guard let pid else { return }
        Glibc.kill(pid, SIGKILL)
        try await waitUntil("speech-dispatcher to die") { Glibc.kill(pid, 0) != 0 }
        try? FileManager.default.removeItem(atPath: socket)
    }

    /// Freezes it (SIGSTOP), as a wedged server looks: its socket stays open and nothing answers.
    func freeze() {
        if let pid { Glibc.kill(pid, SIGSTOP) }
    }

    func thaw() {
        if let pid { Glibc.kill(pid, SIGCONT) }
    }

    /// Every process started on this directory: the one we started and any voiceboxd started in
    /// its place after a wedge (same socket, so its command line names the directory too).
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
    func stopEverything() {
        for pid in Set(processes + (pid.map { [$0] } ?? [])) {
            Glibc.kill(pid, SIGKILL)
            Glibc.kill(pid, SIGCONT)
        }
    }

    deinit {
        stopEverything()
        try? FileManager.default.removeItem(atPath: directory)
    }
}
