@testable import TestSupport
@testable import VoiceboxCore
import XCTest

final class FilePartsTests: XCTestCase {
    /// Loud audio with a quiet 0.5 s every 7 s: each cut falls in a quiet stretch near where
    /// equal parts would meet, and the parts cover every sample once.
    func testCutsFallInPausesAndCoverTheFile() {
        let second = 16_000
        var samples: [Int16] = []
        for index in 0..<(200 * 2) {  // 200 s in half seconds
            let quiet = index % 14 == 13
            samples += (0..<second / 2).map { quiet ? 0 : Int16($0 % 2 == 0 ? 8_000 : -8_000) }
        }
        let ranges = FileParts.ranges(of: samples, count: 4)
        XCTAssertEqual(ranges.count, 4)
        XCTAssertEqual(ranges.first?.lowerBound, 0)
        XCTAssertEqual(ranges.last?.upperBound, samples.count)
        for (earlier, later) in zip(ranges, ranges.dropFirst()) {
            XCTAssertEqual(earlier.upperBound, later.lowerBound)
            XCTAssertEqual(samples[earlier.upperBound], 0, "the cut is in a pause")
        }
        for range in ranges { XCTAssertEqual(Double(range.count), 50.0 * Double(second), accuracy: 8.0 * Double(second)) }
    }

    func testPartsAreAMultipleOfTheCoresAndAtMostAboutAMinute() {
        XCTAssertEqual(FileParts.partCount(seconds: 226, lanes: 2), 4)
        XCTAssertEqual(FileParts.partCount(seconds: 302, lanes: 2), 6)
        XCTAssertEqual(FileParts.partCount(seconds: 100, lanes: 2), 2)
        XCTAssertEqual(FileParts.partCount(seconds: 100, lanes: 8), 3, "never shorter than 30 s")
        XCTAssertEqual(FileParts.ranges(of: [Int16](repeating: 1, count: 16_000), count: 4), [0..<16_000], "too short to cut")
    }
}
