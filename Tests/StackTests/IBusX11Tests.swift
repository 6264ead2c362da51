import Foundation
import Glibc
@testable import TestSupport
import XCTest

/// X11 with IBus as the input method (GTK_IM_MODULE=ibus): IBus's own route types there when
/// asked. (xdotool through IBus's GTK module under load: SpeedTests.IBusTypingUnderLoadTests.)
final class IBusX11Tests: XCTestCase {
    static let x11 = IBusX11Session.classFixture()

    override class func tearDown() {
        x11.stopNow()
        super.tearDown()
    }

    private func session() async throws -> (Stack, IBusX11Session) {
        let stack = try Stack.require()
        let x = try await Self.x11.session()
        try await x.prepareForTest()
        XCTAssertEqual(try x.ibusEngine(), "xkb:us::eng")
        return (stack, x)
    }

    /// `--typer ibus` on X11: committed through IBus as its panel extension, confirmed by GTK's
    /// module's report of the entry, the engine never changed.
    func testTheIBusRouteTypesOnX11WhenAsked() async throws {
        let (stack, x) = try await session()
        let text = Texts.greeting
        let client = try stopsAtEnd(ClientRun(stack, ["insert", "--verbose", "--typer", "ibus", text], environment: x.environment))
        let status = await client.finish(timeout: .seconds(60))
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertTrue(client.stderr.hasPrefix("voicebox: inserting: typed through IBus at unix:"), client.stderr)
        XCTAssertFalse(client.stderr.contains("an engine of Voicebox's types instead"), client.stderr)
        try await x.window.waitFor(text)
        XCTAssertEqual(try x.ibusEngine(), "xkb:us::eng")
    }

    /// GTK's IBus module reports the cursor only when it moves: once the entry has scrolled, it
    /// stays at its right edge. A text of several pieces, then a short one into the full entry:
    /// each arrives exactly and counts as typed (on X11 the application takes each commit itself).
    func testAScrolledEntryStillCountsTheTextAsTyped() async throws {
        let (stack, x) = try await session()
        let long = (0..<120).map { "Satz \($0), Grüße — 東京 ✓. " }.joined()
        var expected = ""
        for text in [long, "abc"] {
            let client = try stopsAtEnd(ClientRun(stack, ["insert", "--typer", "ibus", text], environment: x.environment))
            let status = await client.finish(timeout: .seconds(60))
            expected += text
            XCTAssertEqual(status, 0, client.stderr)
            XCTAssertEqual(client.stdout, "", "typed, not kept")
            try await x.window.waitFor(expected)
        }
    }
}
