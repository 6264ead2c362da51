@testable import TestSupport
import XCTest
@testable import VoiceboxCore

/// The streams' shared budget for replays: holds take from it and give back when they go.
final class ReplayBudgetTests: XCTestCase {
    func testHoldsTakeFromTheBudgetAndGiveBackWhenTheyGo() {
        let budget = ReplayBudget(bytes: 1000)
        var first = budget.hold(600)
        XCTAssertNotNil(first)
        XCTAssertNil(budget.hold(600), "only 400 left")
        var second = budget.hold(400)
        XCTAssertNotNil(second)
        XCTAssertEqual(budget.availableBytes, 0)
        first = nil
        XCTAssertEqual(budget.availableBytes, 600)
        second = nil
        XCTAssertEqual(budget.availableBytes, 1000)
        _ = (first, second)
    }
}
