@testable import VoiceboxCore
import XCTest

final class FilePartsTests: XCTestCase {
    /// Loud audio with a quiet 0.5 s every 7 s: each cut falls in a quiet stretch, near the
    /// part length, and the parts cover every sample once.
    func testCutsFallInPausesAndCoverTheFile() {
        let second = 16_000
        var samples: [Int16] = []
        for index in 0..<(200 * 2) {  // 200 s in half seconds
            let quiet = index % 14 == 13
            samples += (0..<second / 2).map { quiet ? 0 : Int16($0 % 2 == 0 ? 8_000 : -8_000) }
        }
        let ranges = FileParts.ranges(of: samples, partSeconds: 60)
        XCTAssertEqual(ranges.first?.lowerBound, 0)
        XCTAssertEqual(ranges.last?.upperBound, samples.count)
        for (earlier, later) in zip(ranges, ranges.dropFirst()) { XCTAssertEqual(earlier.upperBound, later.lowerBound) }
        XCTAssertEqual(ranges.count, 4)
        for range in ranges.dropLast() {
            XCTAssertGreaterThan(range.count, 52 * second)
            XCTAssertLessThanOrEqual(range.count, 60 * second)
            XCTAssertEqual(samples[range.upperBound], 0, "the cut is in a pause")
        }
    }

    func testAShortFileIsOnePart() {
        let samples = [Int16](repeating: 100, count: 70 * 16_000)
        XCTAssertEqual(FileParts.ranges(of: samples, partSeconds: 60), [0..<samples.count])
    }
}
