import Foundation
import TestSupport
import VoiceboxCore
import VoiceboxLock
import XCTest
@testable import VoiceboxSpeechd

/// The stack the project's test script provides.
enum TestStack {
    /// `SPEECHD_ADDRESS` of the running speech-dispatcher; the tests skip without it.
    static func address() throws -> String {
        guard let address = ProcessInfo.processInfo.environment["SPEECHD_ADDRESS"], !address.isEmpty else {
            throw XCTSkip("SPEECHD_ADDRESS is not set: no speech-dispatcher to test against")
        }
        return address
    }

    /// A ready configuration directory for extra private speech-dispatcher instances.
    static func configDirectory() throws -> String {
        guard let directory = ProcessInfo.processInfo.environment["VOICEBOX_SPEECHD_CONFIG"], !directory.isEmpty else {
            throw XCTSkip("VOICEBOX_SPEECHD_CONFIG is not set")
        }
        return directory
    }
}

/// Collects a synthesizer's events and waits for them with a deadline (never hangs).
final class EventRecorder: Sendable {
    private final class Log: Sendable {
        let entries = Locked<[(event: SynthesisEvent, at: ContinuousClock.Instant)]>([])
    }

    private let log = Log()
    private let reader: Task<Void, Never>

    init(_ synthesizer: SpeechDispatcherSynthesizer) {
        let log = self.log
        reader = Task { [events = synthesizer.events] in
            for await event in events {
                log.entries.withLock { $0.append((event, ContinuousClock.now)) }
            }
        }
    }

    deinit { reader.cancel() }

    var events: [SynthesisEvent] { log.entries.withLock { $0.map(\.event) } }

    func events(for id: UInt64) -> [SynthesisEvent] {
        events.filter { event in
            switch event {
            case .started(let other), .mark(let other, _), .finished(let other, _), .failed(let other, _): other == id
            case .available, .unavailable: false
            }
        }
    }

    func times(of wanted: SynthesisEvent) -> [ContinuousClock.Instant] {
        log.entries.withLock { $0.filter { $0.event == wanted }.map(\.at) }
    }

    func time(of wanted: SynthesisEvent) -> ContinuousClock.Instant? {
        log.entries.withLock { $0.first { $0.event == wanted }?.at }
    }

    /// Waits until `condition` holds for the events so far; false on timeout.
    @discardableResult
    func wait(timeout seconds: Double, until condition: ([SynthesisEvent]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition(events) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(events)
    }

    @discardableResult
    func wait(for event: SynthesisEvent, timeout: Double) async -> Bool {
        await wait(timeout: timeout) { $0.contains(event) }
    }

    /// Waits for the `.finished` of `id` and returns how it ended.
    func end(of id: UInt64, timeout: Double) async -> SynthesisEnd? {
        func find(_ events: [SynthesisEvent]) -> SynthesisEnd? {
            for case .finished(id, let end) in events { return end }
            return nil
        }
        await wait(timeout: timeout) { find($0) != nil }
        return find(events)
    }

    func count(_ event: SynthesisEvent) -> Int { events.filter { $0 == event }.count }
}

/// A speech-dispatcher of the test's own, on its own socket, with the stack's configuration.
final class PrivateSpeechd {
    let directory: URL
    var socketPath: String { directory.appendingPathComponent("speechd.sock").path }
    var address: String { "unix_socket:\(socketPath)" }
    private var pidFile: String { directory.appendingPathComponent("speechd.pid").path }
    private let configDirectory: String
    private var running = false
    /// The server's pid, from its pid file (a server restarted with the same command line rewrites it).
    var pid: pid_t? {
        guard running, let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
              let number = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), number > 1 else { return nil }
        return number
    }

    init(configDirectory: String) throws {
        self.configDirectory = configDirectory
        // Short path: a unix socket path must fit in 108 bytes.
        directory = URL(fileURLWithPath: "/tmp/vbsd-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("log"),
                                                withIntermediateDirectories: true)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Starts it and waits (at most `timeout`) until it accepts connections.
    func start(timeout: Double = 15) throws {
        try? FileManager.default.removeItem(atPath: socketPath)
        try? FileManager.default.removeItem(atPath: pidFile)
        // -d: daemonize (the launcher returns once the modules are up); -t 60: exit after a minute
        // without clients, so a server orphaned by a killed test run does not linger.
        let devNull = open("/dev/null", O_WRONLY)
        defer { close(devNull) }
        let launcher = try Subprocess("/usr/bin/speech-dispatcher",
                                      ["-d", "-t", "60", "-C", configDirectory, "-P", pidFile, "-S", socketPath,
                                       "-L", directory.appendingPathComponent("log").path],
                                      stdoutFD: devNull, stderrFD: devNull)
        let deadline = Date().addingTimeInterval(timeout)
        var launcherDone = false
        while Date() < deadline {
            if !launcherDone { launcherDone = launcher.poll() != nil }
            if launcherDone, let text = try? String(contentsOfFile: pidFile, encoding: .utf8),
               let number = pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)), number > 1,
               Self.accepts(socketPath) {
                running = true
                return
            }
            usleep(20_000)
        }
        throw XCTSkip("private speech-dispatcher did not come up within \(timeout) s")
    }

    /// Like a crash by default (SIGKILL); waits until the socket refuses connections. False when there
    /// was nothing of ours to kill.
    @discardableResult
    func kill(signal: Int32 = SIGKILL) -> Bool {
        guard let pid, pid > 1 else { return false }
        running = false
        // Only what we started: the daemon named in our own pid file, serving our socket.
        let command = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")))
            .map { String(decoding: $0, as: UTF8.self) } ?? ""
        guard command.contains("speech-dispatcher"), command.contains(socketPath) else { return false }
        guard Glibc.kill(pid, signal) == 0 else { return false }
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline, Self.accepts(socketPath) { usleep(10_000) }
        return true
    }

    static func accepts(_ path: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
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

extension SynthesisRequest {
    static let longText = "This is a long sentence that speech dispatcher will take several seconds to say, "
        + "because it goes on and on about nothing in particular, just to keep the synthesizer busy for a while."
}
