@testable import TestSupport
@testable import VoiceboxCore
import XCTest

final class FilePartsTests: XCTestCase {
    /// Loud audio with a quiet `pause` every `period` seconds, for `seconds`.
    private func pausing(seconds: Double, period: Double, pause: Double) -> [Int16] {
        (0..<Int(seconds * 16_000)).map { index in
            let inPeriod = Double(index).truncatingRemainder(dividingBy: period * 16_000) / 16_000
            return inPeriod >= period - pause ? 0 : Int16(index % 2 == 0 ? 8_000 : -8_000)
        }
    }

    /// Each cut falls in a quiet stretch near where equal parts would meet, and the parts cover
    /// every sample once.
    private func assertCutsFallInPauses(_ samples: [Int16], _ parts: FileParts, count: Int, line: UInt = #line) {
        let ranges = parts.ranges(of: samples, count: count)
        XCTAssertEqual(ranges.count, count, line: line)
        XCTAssertEqual(ranges.first?.lowerBound, 0, line: line)
        XCTAssertEqual(ranges.last?.upperBound, samples.count, line: line)
        for (earlier, later) in zip(ranges, ranges.dropFirst()) {
            XCTAssertEqual(earlier.upperBound, later.lowerBound, line: line)
            XCTAssertEqual(samples[earlier.upperBound], 0, "the cut is in a pause", line: line)
        }
        let equal = Double(samples.count) / Double(count)
        for range in ranges {
            XCTAssertEqual(Double(range.count), equal, accuracy: 2 * parts.searchSeconds * 16_000, line: line)
        }
    }

    /// 200 s with a quiet 0.5 s every 7 s, in 4 parts of a minute's cutting.
    func testCutsFallInPausesAndCoverTheFile() {
        assertCutsFallInPauses(pausing(seconds: 200, period: 7, pause: 0.5), FileParts(), count: 4)
    }

    /// A part of 6 s (`file-part` set small, as the tests do) cuts 24 s as a minute's parts cut
    /// minutes: in pauses, near where equal parts meet.
    func testASmallPartCutsAShortRecordingAsAMinuteCutsALongOne() {
        let small = FileParts(partSeconds: 6)
        XCTAssertEqual(small.minimumFileSeconds, 9)
        XCTAssertEqual(small.searchSeconds, 1.5)
        XCTAssertEqual(small.partCount(seconds: 24, lanes: 2), 4)
        XCTAssertEqual(small.partCount(seconds: 10, lanes: 8), 3, "never shorter than half a part")
        assertCutsFallInPauses(pausing(seconds: 24, period: 2.5, pause: 0.5), small, count: 4)
    }

    func testPartsAreAMultipleOfTheCoresAndAtMostAboutAMinute() {
        let parts = FileParts()
        XCTAssertEqual(parts.minimumFileSeconds, 90)
        XCTAssertEqual(parts.searchSeconds, 4)
        XCTAssertEqual(parts.partCount(seconds: 226, lanes: 2), 4)
        XCTAssertEqual(parts.partCount(seconds: 302, lanes: 2), 6)
        XCTAssertEqual(parts.partCount(seconds: 100, lanes: 2), 2)
        XCTAssertEqual(parts.partCount(seconds: 100, lanes: 8), 3, "never shorter than 30 s")
        XCTAssertEqual(parts.ranges(of: [Int16](repeating: 1, count: 16_000), count: 4), [0..<16_000], "too short to cut")
    }

    /// Cutting only the rest, from a place on (a fast stream's, after what one pass decoded),
    /// cuts it where the rest alone would be cut, in the whole recording's indices.
    func testTheRestFromAPlaceOnIsCutAsItWouldBeAlone() {
        let whole = pausing(seconds: 230, period: 7, pause: 0.5)
        let base = 30 * 16_000 + 123
        let alone = FileParts().ranges(of: Array(whole[base...]), count: 4)
        XCTAssertEqual(FileParts().ranges(of: whole, from: base, count: 4),
                       alone.map { $0.lowerBound + base..<$0.upperBound + base })
        XCTAssertEqual(FileParts().ranges(of: whole, from: whole.count - 16_000, count: 4), [whole.count - 16_000..<whole.count],
                       "too short to cut")
    }
}
