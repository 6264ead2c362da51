import Foundation
import Glibc
@testable import TestSupport
import XCTest

/// Typing through IBus while both cores are busy (CPUBurner): on a headless GNOME session
/// (GnomeSession) every text arrives exactly and is confirmed; on X11 with IBus as the input
/// method, xdotool's keys pass through IBus's GTK module and still arrive exactly.
final class IBusTypingUnderLoadTests: XCTestCase {
    static let gnome = GnomeSession.classFixture()
    static let x11 = IBusX11Session.classFixture()

    override class func tearDown() {
        gnome.stopNow()
        x11.stopNow()
        super.tearDown()
    }

    /// 6 rounds of three texts with every core busy: each arrives exactly, each confirmed.
    func testTypingThroughIBusIsExactUnderLoadOnGNOME() async throws {
        let stack = try Stack.require()
        let gnome = try await Self.gnome.session()
        try await gnome.prepareForTest()
        let burner = try CPUBurner()
        addTeardownBlock { await burner.stop() }
        let texts = [Texts.greeting, Texts.sentence, Texts.mixed]
        var exact = 0, rounds = 0
        var misses: [String] = []
        let began = ContinuousClock.now
        for _ in 0..<6 {
            for text in texts {
                try await gnome.window.clear()
                let client = try stopsAtEnd(ClientRun(stack, ["insert", text], environment: gnome.environment))
                let status = await client.finish(timeout: .seconds(60))
                rounds += 1
                // Confirmed means the entry reported the text back; its file is written before that.
                try? await waitUntil("the entry to hold the text", timeout: .seconds(10)) { gnome.window.received == text }
                if status == 0, gnome.window.received == text {
                    exact += 1
                } else {
                    misses.append("\(text.debugDescription) arrived as \(gnome.window.received.debugDescription) (exit \(String(describing: status)): \(client.stderr))")
                }
            }
        }
        let seconds = Double((ContinuousClock.now - began).components.seconds)
        print("METRIC typing through IBus under load, GNOME Wayland: \(exact) of \(rounds) exact in \(Int(seconds)) s")
        XCTAssertEqual(exact, rounds, "\(misses)")
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")
    }

    /// 4 rounds of both texts with every core busy, typed by xdotool (X11's way) through IBus's
    /// GTK module: each arrives exactly.
    func testXdotoolTypesExactlyIntoAGTKEntryThatUsesIBus() async throws {
        let stack = try Stack.require()
        let x = try await Self.x11.session()
        try await x.prepareForTest()
        let burner = try CPUBurner()
        addTeardownBlock { await burner.stop() }
        var exact = 0, rounds = 0
        var misses: [String] = []
        for _ in 0..<4 {
            for text in [Texts.sentence, Texts.mixed] {
                try await x.window.clear()
                let client = try stopsAtEnd(ClientRun(stack, ["insert", text], environment: x.environment))
                let status = await client.finish(timeout: .seconds(60))
                rounds += 1
                try? await waitUntil("the entry to hold the text", timeout: .seconds(10)) { x.window.received == text }
                if status == 0, x.window.received == text {
                    exact += 1
                } else {
                    misses.append("\(text.debugDescription) arrived as \(x.window.received.debugDescription) (exit \(String(describing: status)): \(client.stderr))")
                }
            }
        }
        print("METRIC xdotool into a GTK entry with GTK_IM_MODULE=ibus, under load: \(exact) of \(rounds) exact")
        XCTAssertEqual(exact, rounds, "\(misses)")
        XCTAssertEqual(try x.ibusEngine(), "xkb:us::eng", "xdotool leaves IBus alone")
    }
}
