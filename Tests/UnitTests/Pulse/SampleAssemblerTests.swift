@testable import TestSupport
import XCTest
@testable import VoiceboxPulse

/// The byte-to-sample logic, without a server: odd fragment ends, holes, chunk sizes.
final class SampleAssemblerTests: XCTestCase {
    private func bytes(of samples: [Int16]) -> [UInt8] {
        samples.flatMap { [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)] }
    }

    private func feed(_ assembler: inout SampleAssembler, _ bytes: [UInt8]) -> [[Int16]] {
        bytes.withUnsafeBytes { assembler.append($0) }
    }

    func testWholeSamplesBecomeOneChunk() {
        var assembler = SampleAssembler(minChunk: 4, maxChunk: 8)
        XCTAssertEqual(feed(&assembler, bytes(of: [1, -2, 300, -32768, 32767])), [[1, -2, 300, -32768, 32767]])
    }

    func testOddFragmentsCarryTheHalfSample() {
        var assembler = SampleAssembler(minChunk: 1, maxChunk: 8)
        let all = bytes(of: [1, -2, 300, -32768, 32767, 7])
        // Split at odd offsets: 3 + 5 + 1 + 3 bytes.
        var out: [[Int16]] = []
        out += feed(&assembler, Array(all[0..<3]))
        out += feed(&assembler, Array(all[3..<8]))
        out += feed(&assembler, Array(all[8..<9]))
        out += feed(&assembler, Array(all[9..<12]))
        XCTAssertEqual(out.flatMap { $0 }, [1, -2, 300, -32768, 32767, 7])
    }

    func testHoleDropsTouchedSamplesAndKeepsAlignment() {
        var assembler = SampleAssembler(minChunk: 1, maxChunk: 8)
        let all = bytes(of: [10, 20, 30, 40, 50])
        var out: [[Int16]] = []
        out += feed(&assembler, Array(all[0..<3]))   // 10 and the low byte of 20
        assembler.skip(byteCount: 3)                 // rest of 20, all of 30: gone
        out += feed(&assembler, Array(all[6..<10]))  // 40, 50 intact
        XCTAssertEqual(out.flatMap { $0 }, [10, 40, 50])

        var other = SampleAssembler(minChunk: 1, maxChunk: 8)
        out = feed(&other, Array(all[0..<2]))        // 10
        other.skip(byteCount: 3)                     // 20 and the low byte of 30
        out += feed(&other, Array(all[5..<10]))      // high byte of 30 is an orphan; 40, 50
        XCTAssertEqual(out.flatMap { $0 }, [10, 40, 50])
    }

    func testShortFragmentsWaitAndLongOnesAreSplitEvenly() {
        var assembler = SampleAssembler(minChunk: 240, maxChunk: 800)
        XCTAssertEqual(feed(&assembler, bytes(of: Array(repeating: 1, count: 100))), [])
        XCTAssertEqual(feed(&assembler, bytes(of: Array(repeating: 1, count: 200))).map(\.count), [300])
        XCTAssertEqual(feed(&assembler, bytes(of: Array(repeating: 1, count: 1000))).map(\.count), [500, 500])
        XCTAssertEqual(feed(&assembler, bytes(of: Array(repeating: 1, count: 2401))).map(\.count), [600, 600, 600, 601])
    }
}
