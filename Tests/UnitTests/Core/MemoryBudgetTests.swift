@testable import TestSupport
import XCTest
@testable import VoiceboxCore

/// The streams' shared budgets (replays, reading ahead): holds take from a budget and give back
/// when they go or shrink.
final class MemoryBudgetTests: XCTestCase {
    func testHoldsTakeFromTheBudgetAndGiveBackWhenTheyGo() {
        let budget = MemoryBudget(bytes: 1000)
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

    func testAHoldUpToTakesWhatIsLeftAndGivesBackWhatItNoLongerNeeds() {
        let budget = MemoryBudget(bytes: 1000)
        let kept = budget.hold(700)
        var partial: MemoryBudget.Hold? = budget.hold(upTo: 500)
        XCTAssertEqual(partial?.bytes, 300, "only 300 were left")
        XCTAssertEqual(budget.hold(upTo: 500).bytes, 0, "the budget is spent")
        partial?.shrink(to: 100)
        XCTAssertEqual(partial?.bytes, 100)
        XCTAssertEqual(budget.availableBytes, 200)
        partial?.shrink(to: 400)  // a hold never grows
        XCTAssertEqual(budget.availableBytes, 200)
        partial = nil
        XCTAssertEqual(budget.availableBytes, 300)
        _ = (kept, partial)
    }
}
