import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import VoiceboxDaemon
import XCTest

/// Who is told that the microphone is on: the log names the caller (unique name, pid, command)
/// when its recognition takes the microphone and when it gives it back, and with
/// --notify-microphone a desktop notification is shown for as long and closed after.
// What the sound server decides here: it records from the microphone
final class MicrophoneNoticeTests: XCTestCase {
    /// What a fake notification server was asked.
    actor Notifications {
        var shown: [(summary: String, body: String, timeout: Int32)] = []
        var closed: [UInt32] = []
        func show(_ summary: String, _ body: String, _ timeout: Int32) -> UInt32 {
            shown.append((summary, body, timeout))
            return UInt32(40 + shown.count)
        }
        func close(_ id: UInt32) { closed.append(id) }
    }

    func testTheLogAndTheDesktopAreToldWhoHasTheMicrophone() async throws {
        let stack = try Stack.require()
        let directory = try makeTemporaryDirectory(self)
        let notifications = Notifications()
        let server = try BusConnection(address: stack.busAddress)
        _ = try server.export(path: DesktopNotifications.objectPath, interface: DesktopNotifications.interface, handlers: [
            DesktopNotifications.notify.handler { _, _, _, _, summary, body, _, _, timeout in
                await notifications.show(summary, body, timeout)
            },
            DesktopNotifications.closeNotification.handler { _, id in
                await notifications.close(id)
                return NoReply()
            },
        ])
        let owned = try await server.requestName(DesktopNotifications.busName)
        XCTAssertEqual(owned, .primaryOwner)

        let logPath = directory.appendingPathComponent("voiceboxd.log").path
        let fd = open(logPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        let service = try await startService(on: stack, extraArguments: ["--notify-microphone"], stderrFD: fd)

        // A file is no recording: nothing said.
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        async let answer = service.recognize([:])
        let id = try await service.waitForNewRecognition(besides: service.startedRecognitions)
        try await service.waitForListening(true, timeout: .seconds(30))
        try await waitUntil("the notification") { await notifications.shown.count == 1 }
        _ = try await ServiceHarness.stop(on: service.client)
        let recognized = try await answer
        XCTAssertEqual(recognized.reason, "stopped")
        try await waitUntil("the notification to close") { await notifications.closed == [41] }

        let shown = await notifications.shown
        XCTAssertEqual(shown.first?.summary, "Microphone on")
        XCTAssertTrue(shown.first?.body.contains("recognition \(id)") ?? false, shown.first?.body ?? "")
        XCTAssertEqual(shown.first?.timeout, 0, "shown until closed")

        let me = service.client.uniqueName
        let lines = try String(contentsOfFile: logPath, encoding: .utf8).split(separator: "\n").map(String.init)
        let command = (try? String(contentsOfFile: "/proc/self/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        XCTAssertTrue(lines.contains("voiceboxd: recognition \(id) of \(me) (pid \(getpid()), \(command)) takes the microphone"), "\(lines)")
        XCTAssertTrue(lines.contains("voiceboxd: recognition \(id) of \(me) gave the microphone back (stopped)"), "\(lines)")
        XCTAssertEqual(lines.filter { $0.contains("microphone") }.count, 2, "the file recognition is not announced: \(lines)")
        await service.stop()
        await server.close()
    }
}
