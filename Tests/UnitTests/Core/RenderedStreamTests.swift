import VoiceboxCore
import XCTest

/// The bytes written for a rendering and when its events are due; the x-spiel and WAV layouts.
final class RenderedStreamTests: XCTestCase {
    func drain(_ stream: inout RenderedStream) -> (bytes: [[UInt8]], events: [(Int, RenderEvent)]) {
        var bytes: [[UInt8]] = [], events: [(Int, RenderEvent)] = []
        while let chunk = stream.next() {
            bytes.append(chunk)
            for event in stream.wrote() { events.append((bytes.count, event)) }
        }
        return (bytes, events)
    }

    func testSpielStreamsHaveTheHeaderEventsBeforeTheirAudioAndChunksAPipeTakesWhole() throws {
        let markup = SpeechMarkup(plain: "Hello there.")
        var stream = RenderedStream(encoding: .spiel, markup: markup, format: (22050, 1))
        stream.mark(named: "vb0")
        try stream.audio(Array(repeating: 7, count: 10_000), sampleRate: 22050, channels: 1)
        stream.mark(named: "vb1")
        stream.mark(named: "unknown")
        try stream.audio([1, 2], sampleRate: 22050, channels: 1)
        let (chunks, events) = drain(&stream)
        XCTAssertEqual(chunks[0], Array("0.01".utf8))
        XCTAssertEqual(chunks[1], SpielStream.event(.sentence, start: 0, end: 12))
        XCTAssertEqual(chunks[2], SpielStream.event(.word, start: 0, end: 5))
        XCTAssertEqual(chunks[3...5].map { $0.count }, [4095, 4095, 10_000 - 2 * 4090 + 5])
        XCTAssertTrue(chunks.allSatisfy { $0.count <= 4096 })
        XCTAssertEqual(chunks[6], SpielStream.event(.word, start: 6, end: 12))
        XCTAssertEqual(chunks[7], [1, 2, 0, 0, 0, 1, 2])
        XCTAssertEqual(events.map(\.0), [4])
        XCTAssertEqual(events.map(\.1), [.began])
        XCTAssertThrowsError(try stream.audio([1, 2], sampleRate: 16000, channels: 1), "x-spiel's format is the voice's")
    }

    func testSpielEventLayoutCountsTheNamesBytes() {
        XCTAssertEqual(SpielStream.event(.mark, start: 3, end: 3, name: "é"), [2, 4, 3, 0, 0, 0, 3, 0, 0, 0, 2, 0, 0, 0, 0xC3, 0xA9])
    }

    func testAWAVStartsWithTheFirstBlocksFormatAndTheCallersMarksAreDueAfterTheAudioBeforeThem() throws {
        let markup = SpeechMarkup(ssml: try SSMLDocument("a <mark name=\"m\"/>b"), callerText: "a <mark name=\"m\"/>b")
        var stream = RenderedStream(encoding: .wav(seekable: true), markup: markup, format: (22050, 1))
        stream.mark(named: "vb0")
        try stream.audio([1, 0, 2, 0], sampleRate: 16000, channels: 1)
        stream.mark(named: "vb1")
        try stream.audio([3, 0], sampleRate: 16000, channels: 1)
        let (chunks, events) = drain(&stream)
        XCTAssertEqual(chunks[0], WAVHeader.bytes(sampleRate: 16000, channels: 1))
        XCTAssertEqual(chunks[1...].joined().map { $0 }, [1, 0, 2, 0, 3, 0])
        XCTAssertEqual(events.map(\.1), [.began, .mark("m")])
        XCTAssertEqual(events.map(\.0), [2, 2])
        XCTAssertEqual(stream.written, 44 + 6)
        var empty = RenderedStream(encoding: .wav(seekable: false), markup: SpeechMarkup(plain: ""), format: (22050, 1))
        empty.finish(defaultFormat: (22050, 1))
        XCTAssertEqual(drain(&empty).bytes, [WAVHeader.bytes(sampleRate: 22050, channels: 1)])
    }

    /// espeak-ng --stdout's header, byte for byte, for the unknown length; the sizes of a known one.
    func testWAVHeaderIsEspeakNgsForAnUnknownLength() {
        let header = WAVHeader.bytes(sampleRate: 22050, channels: 1)
        XCTAssertEqual(header, [0x52, 0x49, 0x46, 0x46, 0x24, 0xF0, 0xFF, 0x7F, 0x57, 0x41, 0x56, 0x45, 0x66, 0x6D, 0x74, 0x20,
                                0x10, 0, 0, 0, 1, 0, 1, 0, 0x22, 0x56, 0, 0, 0x44, 0xAC, 0, 0,
                                2, 0, 0x10, 0, 0x64, 0x61, 0x74, 0x61, 0, 0xF0, 0xFF, 0x7F])
        XCTAssertEqual(WAVHeader.sizes(dataBytes: 1000).riff, [0x0C, 0x04, 0, 0])
        XCTAssertEqual(WAVHeader.sizes(dataBytes: 1000).data, [0xE8, 0x03, 0, 0])
    }
}
