import Foundation
import Glibc
import XCTest

/// A whole stack of the test's own (`scripts/stack up` in a temporary directory: bus, sound
/// server, speech-dispatcher), with the run's VOICEBOX_SOUND_SERVER, so that a test may restart
/// its sound server or kill its bus without disturbing the shared one.
final class PrivateStack: Sendable {
    let directory: String
    /// The variables scripts/stack wrote to DIR/env: a process given these lives in this stack.
    let environment: [String: String]
    let stack: Stack

    static let path = Checkout.path("scripts/stack")

    init(shared: Stack) async throws {
        // Short and plain: scripts/stack refuses longer paths (socket paths are limited to 108 bytes).
        directory = "/tmp/vbstack-\(UUID().uuidString.prefix(8))"
        let up = try await Self.script("up", directory, seconds: 90)
        guard up == 0, let text = try? String(contentsOfFile: directory + "/env", encoding: .utf8) else {
            _ = try? await Self.script("down", directory, seconds: 60)
            throw ProgramError(description: "scripts/stack up \(directory) failed (\(up.map(String.init) ?? "timed out"))")
        }
        var environment: [String: String] = [:]
        for line in text.split(separator: "\n") {
            for assignment in line.replacingOccurrences(of: "export ", with: "").split(separator: " ") {
                guard let equals = assignment.firstIndex(of: "=") else { continue }
                environment[String(assignment[..<equals])] = String(assignment[assignment.index(after: equals)...])
                    .trimmingCharacters(in: CharacterSet(charactersIn: "'"))
            }
        }
        self.environment = environment
        stack = Stack(busAddress: environment["DBUS_SESSION_BUS_ADDRESS"] ?? "", speechdAddress: environment["SPEECHD_ADDRESS"] ?? "",
                      sink: shared.sink, micSink: shared.micSink, speechdConfig: environment["VOICEBOX_SPEECHD_CONFIG"] ?? "",
                      binDirectory: shared.binDirectory)
    }

    var pulseServer: String { environment["PULSE_SERVER"] ?? "" }
    var runtimeDirectory: String { environment["XDG_RUNTIME_DIR"] ?? "" }

    /// Kills the sound server as a crash would and starts it again (scripts/stack restart-sound);
    /// returns once its devices deliver audio again.
    func restartSoundServer() async throws {
        let status = try await Self.script("restart-sound", directory, seconds: 60)
        guard status == 0 else { throw ProgramError(description: "scripts/stack restart-sound failed (\(status.map(String.init) ?? "timed out"))") }
    }

    /// Runs scripts/stack through Subprocess: its servers outlive it and must neither inherit a pipe
    /// we read to its end (runProgram would wait for them) nor this thread's blocked signals
    /// (`down` could not TERM them). Their output goes to the stack's logs, the script's to ours.
    private static func script(_ command: String, _ directory: String, seconds: Int) async throws -> Int32? {
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        let process = try Subprocess(path, [command, directory], stdoutFD: null)
        let status = await process.wait(timeout: .seconds(seconds))
        if status == nil { process.signal(SIGKILL) }
        return status
    }

    /// The pid of one of the stack's processes (dbus, pulseaudio, pipewire-pulse, speechd ...).
    func pid(of name: String) -> pid_t? { Stack.pid(of: name, in: directory) }

    func down() async {
        _ = try? await Self.script("down", directory, seconds: 60)
        try? FileManager.default.removeItem(atPath: directory)
    }
}
