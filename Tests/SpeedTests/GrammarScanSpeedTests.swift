@testable import TestSupport
import XCTest
@testable import VoiceboxCore

/// The grammar import scan is linear: blank lines by the thousand once took it minutes (the
/// outcome on the same grammars: UnitTests' SearchRulesTests). Asserted under 1 s and 2 s,
/// measured a few milliseconds here: over 100 times the slack.
final class GrammarScanSpeedTests: XCTestCase {
    func testTheImportScanIsLinearOnSemicolons() {
        let started = ContinuousClock.now
        XCTAssertFalse(RecognitionConfiguration.imports(String(repeating: " ;\n", count: 21_000)))
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(1))
    }

    func testTheImportScanIsQuickOnBlankLines() throws {
        let blank = "x" + String(repeating: "\n", count: 65_000)
        let started = ContinuousClock.now
        try RecognitionConfiguration(grammar: blank).checkSearch()
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2))
    }
}
