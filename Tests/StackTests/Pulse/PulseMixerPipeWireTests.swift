import Foundation
@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import VoiceboxPulse
import XCTest

/// The mixer on pipewire-pulse (a private pipewire + pipewire-pulse; no session manager, so
/// streams are not linked anywhere, but they are listed): it must be recognized as such.
final class PulseMixerPipeWireTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        _ = try sharedServerEnvironment()
        for tool in ["/usr/bin/pipewire", "/usr/bin/pipewire-pulse"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw XCTSkip("\(tool) is not installed")
        }
        directory = "/tmp/vbmixer-pw-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
    }

    override func tearDown() async throws {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// SIGTERM once the test ends, then its exit awaited (bounded).
    private func stopAfterTheTest(_ process: Subprocess) {
        addTeardownBlock {
            process.signal(SIGTERM)
            await process.wait(timeout: .seconds(10))
        }
    }

    /// Starts both and returns pipewire-pulse's address once its socket accepts `pactl`.
    private func startPipeWire() async throws -> String {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_RUNTIME_DIR"] = directory
        environment["HOME"] = directory
        environment["PIPEWIRE_RUNTIME_DIR"] = directory
        let log = open("\(directory)/pipewire.log", O_WRONLY | O_CREAT | O_APPEND, 0o600)
        defer { close(log) }
        stopAfterTheTest(try Subprocess("/usr/bin/pipewire", [], environment: environment, stdoutFD: log, stderrFD: log))
        let core = await waitUntil(.seconds(10)) { FileManager.default.fileExists(atPath: "\(self.directory)/pipewire-0") }
        // Not a skip: the pipewire pass of CI depends on it starting, so a broken start fails.
        guard core else { throw ProgramError(description: "pipewire did not start; see \(directory)/pipewire.log") }
        stopAfterTheTest(try Subprocess("/usr/bin/pipewire-pulse", [], environment: environment, stdoutFD: log, stderrFD: log))
        let address = "unix:\(directory)/pulse/native"
        let up = try await waitUntil(.seconds(10)) { try runCommand(["pactl", "-s", address, "info"], seconds: 2).status == 0 }
        guard up else { throw ProgramError(description: "pipewire-pulse did not start; see \(directory)/pipewire.log") }
        return address
    }

    func testPipeWireIsRecognizedAndHasNoRoleCork() async throws {
        let address = try await startPipeWire()
        let mixer = try PulseMixer(server: address)
        let recorder = await MixerEventRecorder.start(mixer.events)
        let info = try await mixer.serverInfo()
        print("METRIC pipewire-pulse says: \(info.name) \(info.version)")
        XCTAssertTrue(info.isPipeWire, info.name)
        XCTAssertFalse(info.hasRoleCork)
        XCTAssertEqual(info.memory, .writeOnly, "WirePlumber's memory, reached only by writing")
        do {
            _ = try await mixer.rememberedSettings()
            XCTFail("pipewire-pulse's memory cannot be read back")
        } catch {
            XCTAssertEqual(error as? MixerError, .unsupported("the sound server does not tell what it remembers of streams"))
        }

        let player = try Subprocess("/usr/bin/pacat", ["-p", "-s", address, "--property=media.role=music", "/dev/zero"])
        addTeardownBlock { player.signal(SIGKILL) }
        let added = await recorder.first { $0.playback?.processID == player.pid }
        XCTAssertEqual(added?.event.playback?.role, "music")
        let listed = try await mixer.playbackStreams()
        XCTAssertTrue(listed.contains { $0.processID == player.pid && $0.role == "music" }, "\(listed)")
    }
}
