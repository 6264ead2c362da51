import Glibc
@testable import TestSupport
import VoiceboxContract
import XCTest

/// Frames come out of `FrameParser` whole and in order however the bytes were cut, and
/// `FrameReader`, which reads through it, reads them from a socket as before.
final class FrameParserTests: XCTestCase {
    private let frames: [[UInt8]] = [
        FrameReader.frame(tag: 0x41, UnsafeRawBufferPointer(start: nil, count: 0)),
        [0x4D, 3, 0, 0, 0, 1, 2, 3],
        [0x53] + withUnsafeBytes(of: UInt32(300).littleEndian, Array.init) + (0..<300).map { UInt8($0 % 251) },
    ]

    private func taken(_ parser: inout FrameParser) -> [[UInt8]] {
        var found: [[UInt8]] = []
        while case .frame(let tag, let payload) = parser.next() {
            found.append(payload.withUnsafeBytes { FrameReader.frame(tag: tag, $0) })
        }
        return found
    }

    /// The same frames, given all at once, a byte at a time and in pieces of every size up to 13.
    func testFramesComeOutWholeHoweverTheBytesAreCut() {
        let bytes = frames.flatMap { $0 }
        for size in [bytes.count] + Array(1...13) {
            var parser = FrameParser(maximumPayload: 1000)
            var found: [[UInt8]] = []
            for start in stride(from: 0, to: bytes.count, by: size) {
                bytes[start..<min(start + size, bytes.count)].withUnsafeBytes { parser.append($0) }
                found += taken(&parser)
            }
            XCTAssertEqual(found, frames, "pieces of \(size)")
            XCTAssertFalse(parser.isMidFrame)
            XCTAssertEqual(parser.next(), .partial)
        }
    }

    /// A part of a frame waits for the rest; a length over the maximum is malformed, and stays so.
    func testPartAndOverlongFrames() {
        var parser = FrameParser(maximumPayload: 4)
        [UInt8]([0x41, 4, 0]).withUnsafeBytes { parser.append($0) }
        XCTAssertEqual(parser.next(), .partial)
        XCTAssertTrue(parser.isMidFrame)
        [UInt8]([0, 0, 9, 8, 7, 6, 0x41, 5, 0, 0, 0]).withUnsafeBytes { parser.append($0) }
        XCTAssertEqual(parser.next(), .frame(tag: 0x41, payload: [9, 8, 7, 6]))
        XCTAssertEqual(parser.next(), .malformed("a message of 5 bytes"))
        XCTAssertEqual(parser.next(), .malformed("a message of 5 bytes"))
    }

    /// The blocking reader over a socket pair: each frame, then the end.
    func testTheReaderReadsFramesThenTheEnd() {
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair), 0)
        defer { close(pair[0]) }
        XCTAssertNil(FrameReader.write(frames.flatMap { $0 }, to: pair[1], until: .now + .seconds(5)))
        close(pair[1])
        var reader = FrameReader(descriptor: pair[0], maximumPayload: 1000)
        for frame in frames {
            guard case .frame(let tag, let payload) = reader.next(within: .seconds(5)) else { return XCTFail("no frame") }
            XCTAssertEqual(payload.withUnsafeBytes { FrameReader.frame(tag: tag, $0) }, frame)
        }
        XCTAssertEqual(reader.next(within: .seconds(5)), .closed)
    }

    /// The readiness-driven read over a non-blocking socket pair: what is there now (the last frame
    /// still half-sent: nil, nothing lost), then the rest and the end; a frame `deliver` refuses
    /// ends the read with its reason.
    func testReadAvailableTakesWhatIsThereThenTheEnd() {
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair), 0)
        defer { close(pair[0]) }
        _ = fcntl(pair[0], F_SETFL, fcntl(pair[0], F_GETFL) | O_NONBLOCK)
        let bytes = frames.flatMap { $0 }
        XCTAssertNil(FrameReader.write(Array(bytes.dropLast(7)), to: pair[1], until: .now + .seconds(5)))
        var parser = FrameParser(maximumPayload: 1000)
        var chunk = [UInt8](repeating: 0, count: 64)
        var found: [[UInt8]] = []
        let take = { (tag: UInt8, payload: [UInt8]) -> String? in
            found.append(payload.withUnsafeBytes { FrameReader.frame(tag: tag, $0) })
            return nil
        }
        XCTAssertNil(parser.readAvailable(from: pair[0], using: &chunk, take))
        XCTAssertEqual(found, Array(frames.dropLast()))
        XCTAssertNil(FrameReader.write(Array(bytes.suffix(7)), to: pair[1], until: .now + .seconds(5)))
        close(pair[1])
        XCTAssertEqual(parser.readAvailable(from: pair[0], using: &chunk, take), .closed)
        XCTAssertEqual(found, frames)

        var other: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &other), 0)
        defer { close(other[0]); close(other[1]) }
        _ = fcntl(other[0], F_SETFL, fcntl(other[0], F_GETFL) | O_NONBLOCK)
        XCTAssertNil(FrameReader.write(bytes, to: other[1], until: .now + .seconds(5)))
        var refusing = FrameParser(maximumPayload: 1000)
        XCTAssertEqual(refusing.readAvailable(from: other[0], using: &chunk) { _, _ in "not wanted" }, .refused("not wanted"))
    }
}
