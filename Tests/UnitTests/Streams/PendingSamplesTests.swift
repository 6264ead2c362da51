import XCTest
@testable import VoiceboxStreams

/// What a stream has read and not yet given: taken in order, whatever the sizes, and nothing lost
/// across the moves that keep taking cheap.
final class PendingSamplesTests: XCTestCase {
    func testSamplesAreTakenInOrderAcrossAppendsAndMoves() {
        var pending = PendingSamples()
        XCTAssertEqual(pending.take(10), [])
        var appended = 0, taken = 0
        for _ in 0..<2_000 {
            let more = (0..<Int.random(in: 0...300)).map { Int16(truncatingIfNeeded: appended + $0) }
            appended += more.count
            pending.append(more)
            for sample in pending.take(Int.random(in: 0...350)) {
                XCTAssertEqual(sample, Int16(truncatingIfNeeded: taken))
                taken += 1
            }
            XCTAssertEqual(pending.count, appended - taken)
        }
        XCTAssertEqual(pending.take(.max).count, appended - taken)
        XCTAssertTrue(pending.isEmpty)
        XCTAssertEqual(pending.take(-1), [])
    }
}
