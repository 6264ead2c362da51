import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import VoiceboxCore
import XCTest

/// Voicebox as a Spiel speech provider, driven as libspiel drives one (`SpielClient`), against the
/// real stack: what lands in the pipes is taken apart as libspeechprovider's reader does and held
/// against espeak-ng's own rendering of the same text.
final class SpielProviderTests: ServiceTestCase {
    override class var sharesService: Bool { true }
    static let voice = SpielClient.voice
    var spiel: SpielClient { SpielClient(connection: service.client) }

    override func setUp() async throws {
        try await super.setUp()
        try await service.waitForProvider()
    }

    /// libspiel queues every utterance before it reads the first: three Synthesize calls are
    /// answered before a byte is read; then each pipe, read in turn, holds the x-spiel header,
    /// words and sentences at the caller's character offsets before their audio, and audio that is
    /// espeak-ng's rendering of the same text.
    func testThreeQueuedUtterancesArriveWholeWithTheirEventsAndEspeakNgsAudio() async throws {
        let names = try await spiel.providerNames()
        XCTAssertTrue(names.contains(SpeechProvider.busName), "libspiel would not find us among \(names)")
        let (name, voices) = try await spiel.properties(of: SpeechProvider.busName)
        XCTAssertEqual(name, "Voicebox")
        let offered = try XCTUnwrap(voices.first { $0.id == Self.voice }, "\(Self.voice) is not offered")
        XCTAssertEqual(offered.outputFormat, "audio/x-spiel,format=S16LE,channels=1,rate=22050")
        XCTAssertEqual(offered.languages, ["en-gb", "en"])
        XCTAssertEqual(offered.features & 0xB, 0xB, "word, sentence and mark events")

        let texts = ["Hello world. This is the first one.", "A second utterance, queued before anything was read.",
                     "And a third!"]
        var pipes: [Int32] = []
        for text in texts { pipes.append(try await spiel.synthesize(SpeechProvider.busName, text: text, voice: Self.voice)) }
        defer { for fd in pipes { close(fd) } }
        for (text, fd) in zip(texts, pipes) {
            let stream = SpielStreamContents.parse(try await readAll(fd))
            XCTAssertEqual(stream.header, "0.01")
            XCTAssertLessThanOrEqual(stream.largestChunk, 4096, "a chunk larger than a pipe writes at once")
            let words = text.split(separator: " ").map(String.init)
            XCTAssertEqual(stream.events.filter { $0.type == 1 }.map { Self.substring(text, $0) }, words, "word events")
            let audio = SpeechAudio(rate: 22050, samples: SpeechAudio.samples(stream.audio[...]))
            audio.assertMatches(try SpeechAudio.espeak(text), text)
            XCTAssertEqual(stream.pieces.first, .event(stream.events[0]), "an event before any audio")
            XCTAssertEqual(stream.events.first?.type, 2, "a sentence first")
        }
    }

    /// Sentences, words and marks of SSML: offsets count characters of the caller's document,
    /// marks carry their names, and espeak-ng's rendering is the same.
    func testSSMLGivesSentenceWordAndMarkEventsAtTheCallersOffsets() async throws {
        let text = "<speak>Good <mark name=\"m1\"/>morning. <s>Café time</s> now.<mark name=\"end\"/></speak>"
        let fd = try await spiel.synthesize(SpeechProvider.busName, text: text, voice: Self.voice, ssml: true)
        defer { close(fd) }
        let stream = SpielStreamContents.parse(try await readAll(fd))
        let described = stream.events.map { event in
            event.type == 4 ? "mark \(event.name)" : "\(event.type == 1 ? "word" : "sentence") " + Self.substring(text, event)
        }
        XCTAssertEqual(described, ["sentence Good <mark name=\"m1\"/>morning.", "word Good", "mark m1", "word morning.",
                                   "sentence Café time", "word Café", "word time", "sentence now.", "word now.", "mark end"])
        let mark = try XCTUnwrap(stream.events.first { $0.name == "m1" })
        XCTAssertEqual(mark.start, Self.offset(of: "<mark name=\"m1\"", in: text))
        XCTAssertEqual(mark.end, mark.start)
        let audio = SpeechAudio(rate: 22050, samples: SpeechAudio.samples(stream.audio[...]))
        audio.assertMatches(try SpeechAudio.espeak(text, ssml: true), "SSML")
    }

    /// Where `part` begins in `text`, in characters.
    static func offset(of part: String, in text: String) -> Int? {
        let scalars = Array(text.unicodeScalars), wanted = Array(part.unicodeScalars)
        return (0...(scalars.count - wanted.count)).first { scalars[$0..<($0 + wanted.count)].elementsEqual(wanted) }
    }

    /// The part of `text` an event's range covers, counted in characters.
    static func substring(_ text: String, _ event: SpielStreamContents.Event) -> String {
        let scalars = Array(text.unicodeScalars)
        guard event.start <= event.end, event.end <= scalars.count else { return "<\(event.start)..<\(event.end)>" }
        return String(String.UnicodeScalarView(scalars[event.start..<event.end]))
    }

    /// Rate and pitch as libspiel sends them: rate 2 takes about half the time, pitch changes the
    /// voice, and values outside 0.1-10 and 0-2 are refused.
    func testRateAndPitchAsLibspielSendsThem() async throws {
        let text = "Rate and pitch as a Spiel client sends them."
        var seconds: [Double] = []
        var levels: [SpeechAudio] = []
        for (rate, pitch) in [(1.0, 1.0), (2.0, 1.0), (1.0, 2.0)] {
            let fd = try await spiel.synthesize(SpeechProvider.busName, text: text, voice: Self.voice, pitch: pitch, rate: rate)
            let stream = SpielStreamContents.parse(try await readAll(fd))
            close(fd)
            let audio = SpeechAudio(rate: 22050, samples: SpeechAudio.samples(stream.audio[...]))
            seconds.append(audio.seconds)
            levels.append(audio)
        }
        XCTAssertEqual(seconds[1] / seconds[0], 0.5, accuracy: 0.12, "rate 2: \(seconds)")
        let normal = levels[0].medianPitch(), high = levels[2].medianPitch()
        XCTAssertGreaterThan(normal, 70, "no voiced frames found")
        XCTAssertGreaterThan(high, normal * 1.3, "pitch 2 is not higher: \(high) Hz against \(normal) Hz")
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        defer { close(ends[0]); close(ends[1]) }
        let bad = await spiel.synthesizeError(SpeechProvider.busName, fd: ends[1], voice: Self.voice, rate: 11)
        XCTAssertEqual(bad, "org.voicebox.Error.InvalidArgument")
        let low = await spiel.synthesizeError(SpeechProvider.busName, fd: ends[1], voice: Self.voice, pitch: -0.1)
        XCTAssertEqual(low, "org.voicebox.Error.InvalidArgument")
    }
}
