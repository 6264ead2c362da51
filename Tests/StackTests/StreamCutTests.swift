import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import XCTest

/// Four streams of two callers hear unbroken speech in real time (no pause for minutes, so none
/// comes to yield at): asked for a while with no pause (`stream-cut`, 0.5 s here), a holder past
/// its hold in speech (`stream-hold-in-speech`, the standard 5 s) cuts its utterance and gives its
/// decoder to a third caller's stream; what each heard is kept. (The hold is not made small: it
/// counts wall time, and a listening stream cut before its decoder has heard the detector's
/// 1.5 s warm-up loses its first words. With 1 s and 2 s, on cores loaded 8 times over, one heard
/// "so go forward…" and "readers go forward…".) The tests share one voiceboxd; each ends what it
/// started. (Which holder is asked: FileRecognitionQueueTests.)
final class StreamCutTests: SharedRecognitionTestCase {
    override class var serviceArguments: [String] { ["--bound", "stream-cut=0.5"] }
    private let expected = Streams.expected

    func testStreamsOfUnbrokenSpeechCutAnUtteranceForAThirdCallersStream() async throws {
        try await answerAStreamBesideBabble(options: [:])
    }

    /// The same, listening for the end of speech (silence_seconds), which never comes.
    func testListeningStreamsOfUnbrokenSpeechCutAnUtteranceForAThirdCallersStream() async throws {
        try await answerAStreamBesideBabble(options: ["silence_seconds": .double(10)])
    }

    /// A third caller's stream given a decoder by a cut keeps it while another caller holds two:
    /// the stream that was cut, waiting again, does not take it back at the first pause (CI,
    /// 2026-12-05: the two handed one decoder back and forth, and the third caller's stream waited
    /// for a second cut). Its speech comes in real time with a pause, past its hold; it is heard
    /// whole. (That the cut stream's caller, holding one, is not the one asked while another
    /// holds two is FileRecognitionQueueTests.testAStreamGivenACallersOnlyDecoderIsNotAskedForIt…;
    /// here, the words that come out of it.)
    func testAStreamGivenADecoderByACutKeepsItWhileAnotherCallerHoldsTwo() async throws {
        let (service, stack) = (self.service!, self.stack!)
        let callers = try (0..<2).map { _ in try BusConnection(address: stack.busAddress) }
        let known = service.startedRecognitions
        let (writers, streams) = try Streams.twoEach(try Streams.babble(seconds: 120), from: callers,
                                                     options: ["silence_seconds": .double(10)], realTime: true)
        let ids = try await service.waitForNewRecognitions(4, besides: known)

        let other = try BusConnection(address: stack.busAddress)
        let twice = try Recordings.bytes() + Recordings.bytes()  // 5.6 s, a 0.8 s pause between
        let speech = try PipeWriter(twice, piece: 3_200, pause: .milliseconds(100))
        defer { speech.closeReadEnd() }
        let streamed = try await ServiceHarness.recognize(on: other, ["stream": .unixFD(speech.readEnd)], timeout: .seconds(300))
        XCTAssertEqual(streamed.text, expected + " " + expected)
        Streams.assertStillRunning(ids, of: service)
        for caller in callers { try await ServiceHarness.call("CancelRecognition", on: caller) }
        for stream in streams { _ = try? await stream.value }
        for writer in writers { writer.closeReadEnd() }
        for connection in callers + [other] { await connection.close() }
    }

    /// Four streams of babble in real time (`options` added), another caller's stream answered
    /// while they all run; each, stopped once it has heard several repetitions, keeps every word
    /// it heard, across the cuts it made.
    private func answerAStreamBesideBabble(options: [String: DBusValue]) async throws {
        let (service, stack) = (self.service!, self.stack!)
        let callers = try (0..<2).map { _ in try BusConnection(address: stack.busAddress) }
        let known = service.startedRecognitions
        let (writers, streams) = try Streams.twoEach(try Streams.babble(seconds: 120), from: callers,
                                                     options: options.merging(["partial_results": .boolean(true)]) { $1 },
                                                     realTime: true)
        let ids = try await service.waitForNewRecognitions(4, besides: known)

        let other = try BusConnection(address: stack.busAddress)
        try await Streams.answeredBeside(ids, of: service, on: other)
        try await waitUntil("three repetitions heard by each stream", timeout: .seconds(120)) {
            ids.allSatisfy { id in
                service.recognitionSignals(of: id).contains { ($0.arguments.last?.string ?? "").components(separatedBy: "forward").count > 3 }
            }
        }
        for caller in callers { try await ServiceHarness.call("StopRecognition", on: caller) }
        for stream in streams {
            let heard = try await stream.value
            XCTAssertEqual(heard.reason, "stopped")
            XCTAssertTrue(heard.text.hasPrefix("go forward ten meters"), heard.text)
            XCTAssertGreaterThan(heard.text.components(separatedBy: "forward").count, 3, "words lost: \(heard.text)")
        }
        for writer in writers { writer.closeReadEnd() }
        for connection in callers + [other] { await connection.close() }
    }
}
