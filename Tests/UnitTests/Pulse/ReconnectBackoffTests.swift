@testable import TestSupport
import XCTest
@testable import VoiceboxPulse

final class ReconnectBackoffTests: XCTestCase {
    func testBackoffDoublesFromAQuarterSecondToTenSecondsAndResets() {
        var backoff = ReconnectBackoff()
        let delays = (0..<8).map { _ in backoff.take() }
        XCTAssertEqual(delays, [.milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8),
                                .seconds(10), .seconds(10)])
        backoff.reset()
        XCTAssertEqual(backoff.take(), .milliseconds(250))
    }
}
