import Foundation
import Glibc
@testable import TestSupport
import XCTest

/// Typing while both cores are busy (CPUBurner): every round of every text arrives exactly, in a
/// real X client (on a US and a French layout) and in foot under headless sway. The machine is
/// loaded on purpose, so these run in the speed tier, alone. Eight rounds of two texts a test: a
/// lost or garbled round fails it; `bench/dictation` types many more and counts them.
final class TypingUnderLoadTests: XCTestCase {
    private let rounds = 8

    /// `rounds` rounds of each text with both cores busy: every one must arrive exactly.
    private func typeUnderLoad(keymap: String?) async throws {
        let (stack, x) = try await xSession(keymap: keymap)
        let burner = try CPUBurner()
        addTeardownBlock { await burner.stop() }
        let report = try await TypingRounds.run(texts: [Texts.sentence, Texts.mixed], rounds: rounds, received: { x.received },
                                                clear: { truncate(x.output, 0) }) { text in
            try self.stopsAtEnd(ClientRun(stack, ["insert", text], environment: x.environment))
        }
        print("typing under load, X11 \(keymap ?? "us"): \(report)")
        XCTAssertEqual(report.exact, report.rounds, "\(report.misses)")
    }

    func testTypingIsExactUnderLoadOnAUSLayout() async throws {
        try await typeUnderLoad(keymap: nil)
    }

    func testTypingIsExactUnderLoadOnAFrenchLayout() async throws {
        try await typeUnderLoad(keymap: "fr")
    }

    func testTypingIsExactUnderLoadInFoot() async throws {
        let (stack, wayland) = try await waylandSession()
        let burner = try CPUBurner()
        addTeardownBlock { await burner.stop() }
        let report = try await TypingRounds.run(texts: [Texts.sentence, Texts.mixed], rounds: rounds,
                                                received: { wayland.received }, clear: { truncate(wayland.output, 0) }) { text in
            try self.stopsAtEnd(ClientRun(stack, ["insert", text], environment: wayland.environment))
        }
        print("typing under load, foot in sway: \(report)")
        XCTAssertEqual(report.exact, report.rounds, "\(report.misses)")
    }
}
