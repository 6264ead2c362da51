import Foundation
import Glibc
import VoiceboxBus
import VoiceboxContract
import VoiceboxThreads
import XCTest

/// What the fault tests share: figures in the suite's METRIC format, and the caller's view of
/// audio interruptions.

/// Whether the service runs under a sanitizer (scripts/test --sanitize sets VOICEBOX_SANITIZER):
/// memory figures then measure the sanitizer's shadow memory, not Voicebox.
var underSanitizer: Bool { ProcessInfo.processInfo.environment["VOICEBOX_SANITIZER"].map { !$0.isEmpty } ?? false }

/// Prints how long something took, as `METRIC fault <what>: <seconds> s` (bench/faults measures the same).
func faultMetric(_ what: String, since start: ContinuousClock.Instant) -> Double {
    let value = seconds(ContinuousClock.now - start)
    print(String(format: "METRIC fault %@: %.3f s", what, value))
    return value
}

extension ServiceHarness {
    /// AudioInterruption signals so far: state and info.
    var interruptions: [(state: String, info: [String: DBusValue])] {
        signals.filter { $0.member == "AudioInterruption" }.map { signal in
            (signal.arguments.first?.string ?? "", signal.arguments.dropFirst().first?.vardictEntries ?? [:])
        }
    }

    /// Waits for the `count`th AudioInterruption in `state`; returns its info.
    func waitForInterruption(_ state: String, count: Int = 1, timeout: Duration = .seconds(10)) async throws -> [String: DBusValue] {
        try await waitUntil("AudioInterruption \(state) #\(count)", timeout: timeout) {
            self.interruptions.filter { $0.state == state }.count >= count
        }
        return interruptions.filter { $0.state == state }[count - 1].info
    }

    /// Speak through `busctl` in a process of its own (a client that can be killed): `wait` true.
    static func speakingClient(_ text: String, others: String) throws -> Subprocess {
        try Subprocess("/usr/bin/busctl", ["--user", "--timeout=120", "call", name, path, interface, "Speak", "sa{sv}", text,
                                           "2", "wait", "b", "true", "others", "s", others])
    }
}

/// A tone playing into `sink` through paplay, on the sound server `environment` names (nil: the
/// stack's), as another application's audio.
final class OtherAudio: Sendable {
    let process: Subprocess
    let server: String?

    init(sink: String, role: String? = nil, environment: [String: String]? = nil) throws {
        server = environment?["PULSE_SERVER"]
        let merged = environment.map { ProcessInfo.processInfo.environment.merging($0) { $1 } }
        process = try Subprocess("/usr/bin/paplay", ["-d", sink] + (role.map { ["--property=media.role=\($0)"] } ?? []) + [try Tone.file()],
                                 environment: merged)
    }

    var state: ServerStream? { (try? ServerStream.playback(server: server))?.first { $0.processID == process.pid } }

    /// Silenced as a user hears it: muted, or corked by the server's role-cork module.
    var silenced: Bool? { state.map { $0.muted || $0.corked } }

    func waitUntilListed() async throws {
        try await waitUntil("the other stream to play") { self.state != nil }
    }

    deinit { process.signal(SIGKILL) }
}

/// A dbus-daemon of the test's own, which a test may kill.
final class KillableBus: Sendable {
    let directory: String
    let address: String
    let pid: pid_t

    init() async throws {
        directory = "/tmp/vbbus-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let status = try await runQuietly("/usr/bin/dbus-daemon", ["--session", "--fork", "--print-address=1", "--print-pid=1",
                                                                  "--address=unix:path=\(directory)/bus"],
                                          output: directory + "/started")
        let output = (try? String(contentsOfFile: directory + "/started", encoding: .utf8)) ?? ""
        let lines = output.split(separator: "\n").map(String.init)
        guard status == 0, lines.count >= 2, let pid = pid_t(lines[1]) else {
            throw ProgramError(description: "dbus-daemon did not start: \(output)")
        }
        address = lines[0]
        self.pid = pid
    }

    private let killed = Locked(false)

    /// Kills it as a crash would; once only, so that a pid reused after it is never signalled.
    func kill() {
        guard !killed.withLock({ was in defer { was = true }; return was }) else { return }
        Glibc.kill(pid, SIGKILL)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// A log file a daemon writes its standard error to, read back by the test.
final class LogFile: Sendable {
    let path: String
    let descriptor: Int32

    init() {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("voiceboxd-\(UUID().uuidString.prefix(8)).log").path
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    }

    var text: String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

    deinit {
        close(descriptor)
        unlink(path)
    }
}

/// Runs a program to its end through Subprocess (bounded; KILLed after `seconds`), its output to
/// `output` (nil: /dev/null). Foundation's Process, which runProgram uses, once never saw a forking
/// dbus-daemon's starter exit, and hung the test.
@discardableResult
func runQuietly(_ path: String, _ arguments: [String], output: String? = nil, seconds: Int = 10,
                 environment: [String: String] = [:]) async throws -> Int32? {
    let descriptor = open(output ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    defer { close(descriptor) }
    let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
    defer { close(null) }
    let process = try Subprocess(path, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
                                 stdoutFD: descriptor, stderrFD: null)
    let status = await process.wait(timeout: .seconds(seconds))
    if status == nil { process.signal(SIGKILL) }
    return status
}

extension XCTestCase {
    /// Speaks `text` until it works (the engine reconnecting); its id.
    func speakWhenBack(_ service: ServiceHarness, _ text: String = "back again", options: [String: DBusValue] = [:],
                       timeout: Duration = .seconds(20)) async throws -> UInt64 {
        var id: UInt64 = 0
        try await waitUntil("Speak to work", timeout: timeout) {
            id = (try? await service.speak(text, options)) ?? 0
            if id == 0 { try? await Task.sleep(for: .milliseconds(50)) }
            return id != 0
        }
        return id
    }
}
