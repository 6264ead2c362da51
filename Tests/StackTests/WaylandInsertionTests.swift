import Foundation
import Glibc
@testable import TestSupport
import XCTest

/// `voicebox insert` into a real Wayland client under headless sway: wtype types any text on
/// any layout; paste goes through wl-copy with foot's own keys, and restores the clipboard.
final class WaylandInsertionTests: XCTestCase {
    func testInsertTypesNonASCIITextIntoAWaylandWindow() async throws {
        let (stack, wayland) = try await waylandSession()
        let client = try stopsAtEnd(ClientRun(stack, ["insert", "café naïve Größe, go forward"], environment: wayland.environment))
        let status = await client.finish(timeout: .seconds(30))
        XCTAssertEqual(status, 0, client.stderr)
        try await wayland.waitFor("café naïve Größe, go forward")
    }

    func testPasteIntoFootUsesItsOwnKeysAndRestoresTheClipboard() async throws {
        let (stack, wayland) = try await waylandSession()
        let copy = try Subprocess("/usr/bin/wl-copy", ["what the user had copied"], environment: wayland.environment,
                                  stdoutFD: XSession.devNullForTests, stderrFD: XSession.devNullForTests)
        _ = await copy.wait(timeout: .seconds(10))
        let client = try stopsAtEnd(ClientRun(stack, ["insert", "--output", "paste", "pasted, déjà vu"], environment: wayland.environment))
        let status = await client.finish(timeout: .seconds(30))
        XCTAssertEqual(status, 0, client.stderr)
        try await wayland.waitFor("pasted, déjà vu")
        let (pasteStatus, clipboard) = try runProgram(["env", "WAYLAND_DISPLAY=\(wayland.runtime)/wayland-1",
                                                       "wl-paste", "--no-newline"], seconds: 10)
        XCTAssertEqual(pasteStatus, 0)
        XCTAssertEqual(clipboard, "what the user had copied")
    }

    func testAWindowClosedWhileTypingKeepsTheText() async throws {
        let (stack, wayland) = try await waylandSession()
        let text = String(repeating: "Words typed while the window closes, déjà vu. ", count: 12)
        let client = try stopsAtEnd(ClientRun(stack, ["insert", text], environment: wayland.environment))
        try await waitUntil("typing to begin", timeout: .seconds(15)) { wayland.received.count >= 10 }
        await wayland.closeTerminal()
        let status = await client.finish(timeout: .seconds(60))
        XCTAssertEqual(status, 4, client.stderr)
        XCTAssertEqual(client.stdout, text + "\n")
        XCTAssertTrue(client.stderr.contains("was closed or lost the keyboard focus while the text was typed"), client.stderr)
        let (_, clipboard) = try runProgram(["env", "WAYLAND_DISPLAY=\(wayland.runtime)/wayland-1", "wl-paste", "--no-newline"], seconds: 10)
        XCTAssertEqual(clipboard, text)
    }
}
