import Foundation
import Glibc
import TestSupport
import XCTest

/// A whole stack of the test's own (`scripts/stack up` in a temporary directory: bus, sound
/// server, speech-dispatcher), with the run's VOICEBOX_SOUND_SERVER, so that a test may restart
/// its sound server or kill its bus without disturbing the shared one.
final class PrivateStack: Sendable {
    let directory: String
    /// The variables scripts/stack wrote to DIR/env: a process given these lives in this stack.
    let environment: [String: String]
    let stack: Stack

    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/stack").path

    init(shared: Stack) throws {
        // Short and plain: scripts/stack refuses longer paths (socket paths are limited to 108 bytes).
        directory = "/tmp/vbstack-\(UUID().uuidString.prefix(8))"
        let up = try runProgram([Self.script, "up", directory], seconds: 90)
        guard up.status == 0, let text = try? String(contentsOfFile: directory + "/env", encoding: .utf8) else {
            _ = try? runProgram([Self.script, "down", directory], seconds: 60)
            throw ProgramError(description: "scripts/stack up \(directory) failed (\(up.status))")
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
    func restartSoundServer() throws {
        let result = try runProgram([Self.script, "restart-sound", directory], seconds: 60)
        guard result.status == 0 else { throw ProgramError(description: "scripts/stack restart-sound failed (\(result.status))") }
    }

    /// The pid of one of the stack's processes (dbus, pulseaudio, pipewire-pulse, speechd ...).
    func pid(of name: String) -> pid_t? {
        (try? String(contentsOfFile: "\(directory)/pids/\(name).pid", encoding: .utf8))
            .flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    /// A program run in this stack (pactl, paplay ...), bounded.
    func run(_ arguments: [String], seconds: Int = 10) throws -> (status: Int32, output: String) {
        try runProgram(["/usr/bin/env"] + environment.map { "\($0.key)=\($0.value)" } + arguments, seconds: seconds)
    }

    func down() {
        _ = try? runProgram([Self.script, "down", directory], seconds: 60)
        try? FileManager.default.removeItem(atPath: directory)
    }
}
