import Foundation
import Glibc
@testable import TestSupport
import XCTest

/// `voicebox dictate --output type` on a real headless GNOME Wayland session (GnomeSession), with
/// voiceboxd on the session's bus and the stack's fake microphone: what was heard arrives in the
/// GTK entry through IBus, and a composition begun while dictating is not ended by it.
final class GnomeDictationTests: XCTestCase {
    static let gnome = GnomeSession.classFixture()

    override class func tearDown() {
        gnome.stopNow()
        super.tearDown()
    }

    private func session() async throws -> (Stack, GnomeSession) {
        try Recordings.require()
        let stack = try Stack.require()
        let gnome = try await Self.gnome.session()
        try await gnome.prepareForTest()
        return (stack, gnome)
    }

    /// `voicebox dictate` in the session (voiceboxd on the session's bus, the stack's fake
    /// microphone): what was heard arrives in the entry; `status` names the way.
    // What the sound server decides here: the microphone
    func testDictateTypesWhatWasHeardAndStatusNamesIBus() async throws {
        let (stack, gnome) = try await session()
        let service = try await startService(on: gnome.onSessionBus(stack), environment: ["DBUS_SESSION_BUS_ADDRESS": gnome.busAddress])
        let wav = try Recordings.wav("goforward.raw", in: try makeTemporaryDirectory(self))
        let dictation = try stopsAtEnd(ClientRun(stack, ["dictate", "--output", "type"], environment: gnome.environment))
        let id = try await service.waitForNewRecognition(besides: [])
        try await service.waitForListening(true)
        try await service.waitUntilHeard(id, seconds: 2)  // the detector's warm-up, as the contract tells apps
        let player = try stopsAtEnd(Player(wav, sink: stack.micSink))
        let status = await dictation.finish()
        await player.waitUntilDone()
        XCTAssertEqual(status, 0, dictation.stderr)
        XCTAssertEqual(dictation.stdout, "", "typed, not printed")
        try await gnome.window.waitFor("Go forward ten meters")
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")

        let report = try stopsAtEnd(ClientRun(stack, ["status"], environment: gnome.environment))
        let reportStatus = await report.finish()
        XCTAssertEqual(reportStatus, 0, report.stderr)
        XCTAssertTrue(report.stdout.contains("\ndictation: typed through IBus at unix:"), report.stdout)
        let json = try stopsAtEnd(ClientRun(stack, ["status", "--json"], environment: gnome.environment))
        let jsonStatus = await json.finish()
        XCTAssertEqual(jsonStatus, 0, json.stderr)
        XCTAssertTrue(json.stdout.contains("\"typing\":\"ibus\""), json.stdout)
    }

    /// A dead key typed while dictating (IBus's xkb engine shows "´", and would drop it on an
    /// engine switch): the text goes in before it, the dead key stays as the user left it, and
    /// their "e" then makes "é".
    // What the sound server decides here: the microphone
    func testADeadKeyTypedWhileDictatingIsLeftAsTheUserLeftIt() async throws {
        let (stack, gnome) = try await session()
        let service = try await startService(on: gnome.onSessionBus(stack), environment: ["DBUS_SESSION_BUS_ADDRESS": gnome.busAddress])
        // A layout with dead keys (US international), for this test only.
        try gnome.run(["gsettings", "set", "org.gnome.desktop.input-sources", "sources", "[('xkb', 'us+intl')]"])
        addTeardownBlock { _ = try? gnome.run(["gsettings", "set", "org.gnome.desktop.input-sources", "sources", "[('xkb', 'us')]"]) }
        let wav = try Recordings.wav("goforward.raw", in: try makeTemporaryDirectory(self))
        let dictation = try stopsAtEnd(ClientRun(stack, ["dictate", "--output", "type"], environment: gnome.environment))
        let id = try await service.waitForNewRecognition(besides: [])
        try await service.waitForListening(true)
        // dead_acute, until the layout is in place and the entry shows the composition.
        try await waitUntil("the dead key's composition in the entry", timeout: .seconds(20)) {
            if gnome.window.preedit == "´" { return true }
            try? await gnome.press([0xFE51])
            try? await Task.sleep(for: .milliseconds(300))
            return gnome.window.preedit == "´"
        }
        // As the contract tells apps: speak after the detector's 1.5 s warm-up (the first word was
        // lost once when the dead key came quickly).
        try await service.waitUntilHeard(id, seconds: 2)
        let player = try stopsAtEnd(Player(wav, sink: stack.micSink))
        await player.waitUntilDone()
        let status = await dictation.finish()
        XCTAssertEqual(status, 0, dictation.stderr)
        try await gnome.window.waitFor("Go forward ten meters")
        XCTAssertEqual(gnome.window.preedit, "´", "the composition is as the user left it")
        try await gnome.press([0x65])
        try await gnome.window.waitFor("Go forward ten metersé")
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")
    }
}
