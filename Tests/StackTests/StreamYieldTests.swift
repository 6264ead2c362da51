import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import XCTest

/// Two callers' streams hold every stream decoder (4, 2 a caller): one of them gives its decoder
/// to a third caller's stream at a pause in its audio, or when its writer falls silent after
/// speech, keeping what it heard. The class's voiceboxd never cuts inside speech
/// (`stream-hold-in-speech` an hour), so that another caller answered at all was answered by a
/// yield; and holds a decoder only 0.3 s before it yields (`stream-hold`). The tests share it;
/// each ends what it started. (The order in which holders are asked: FileRecognitionQueueTests.)
final class StreamYieldTests: SharedRecognitionTestCase {
    override class var serviceArguments: [String] { ["--bound", "stream-hold=0.3", "--bound", "stream-hold-in-speech=3600"] }
    private let expected = Streams.expected

    /// Waits until every one of `ids` has sent a RecognitionPartial with `words` words or more.
    private func waitForPartials(_ ids: [UInt64], words: Int) async throws {
        try await waitUntil("\(words) words heard by each stream", timeout: .seconds(120)) {
            ids.allSatisfy { id in
                self.service.recognitionSignals(of: id).contains { signal in
                    signal.member == "RecognitionPartial" && (signal.arguments.last?.string ?? "").split(separator: " ").count >= words
                }
            }
        }
    }

    /// Two callers' steady streams (goforward over and over, a pause every 2.8 s, as fast as the
    /// pipe goes) hold all four stream decoders: one of them gives its decoder to a third
    /// caller's stream at its next pause, while all four still run.
    func testStreamsOfTwoCallersYieldADecoderToAThirdCallersStream() async throws {
        let (service, stack) = (self.service!, self.stack!)
        let bytes = try Streams.goforward(times: 100)  // 279 s each
        let callers = try (0..<2).map { _ in try BusConnection(address: stack.busAddress) }
        let known = service.startedRecognitions
        let started = try Streams.start(bytes, count: 2, on: callers, options: ["stream_idle_seconds": .double(3600)])
        let ids = try await service.waitForNewRecognitions(4, besides: known)

        let other = try BusConnection(address: stack.busAddress)
        try await Streams.answeredBeside(ids, of: service, on: other)
        try await Streams.cancel(started, of: callers, closing: [other])
    }

    /// Listening for the end of speech (silence_seconds 10), streams of two callers hear speech
    /// with short pauses and no end: one gives its decoder to a third caller's stream in a pause,
    /// keeping what it heard.
    func testListeningStreamsOfTwoCallersYieldADecoderInAPause() async throws {
        let (service, stack) = (self.service!, self.stack!)
        let bytes = try Streams.goforward(times: 100)  // 279 s, a pause every 2.8 s
        let callers = try (0..<2).map { _ in try BusConnection(address: stack.busAddress) }
        let known = service.startedRecognitions
        let (writers, streams) = try Streams.twoEach(bytes, from: callers, options: ["silence_seconds": .double(10),
                                                                                   "partial_results": .boolean(true)])
        let ids = try await service.waitForNewRecognitions(4, besides: known)

        let other = try BusConnection(address: stack.busAddress)
        try await Streams.answeredBeside(ids, of: service, on: other)
        // A listening stream of the third caller, itself asked to yield while the others wait:
        // not a word lost (the red team once got "" here, speech hidden in a fresh decoder's warm-up).
        let quiet = [UInt8](repeating: 0, count: 16_000)
        let phrase = try PipeWriter(quiet + (try Recordings.bytes()) + quiet + quiet + quiet + quiet + quiet + quiet,
                                    piece: 3_200, pause: .milliseconds(100))  // in real time
        let listened = try await ServiceHarness.recognize(on: other, ["stream": .unixFD(phrase.readEnd), "silence_seconds": .double(2)],
                                                          timeout: .seconds(300))
        phrase.closeReadEnd()
        XCTAssertEqual(listened.text, expected)
        XCTAssertEqual(listened.reason, "endpoint")
        Streams.assertStillRunning(ids, of: service)
        try await waitForPartials(ids, words: 6)
        for caller in callers { try await ServiceHarness.call("StopRecognition", on: caller) }
        for stream in streams {
            let heard = try await stream.value
            XCTAssertEqual(heard.reason, "stopped")
            // Six words heard before the stop: on loaded cores the sixth may still be a partial "for".
            XCTAssertTrue(heard.text.hasPrefix("go forward ten meters go"), heard.text)
        }
        for writer in writers { writer.closeReadEnd() }
        for connection in callers + [other] { await connection.close() }
    }

    /// Listening for the end of speech, four streams of two callers hear speech and then their
    /// writers send nothing (idle bound an hour): wanted by a third caller's stream, their
    /// silence ends their utterances as silence would, with what they heard. (Their audio ends
    /// inside speech, and this voiceboxd never cuts: only the writer's silence can end one.)
    func testSpeechThenASilentWriterEndsItsUtteranceWhenAnotherStreamWaits() async throws {
        let (service, stack) = (self.service!, self.stack!)
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        let quiet = [UInt8](repeating: 0, count: 48_000)  // 1.5 s, the detector's warm-up
        let speech = Array(try Recordings.bytes().prefix(32_000 * 2))  // the first 2 s: "go forward ten"
        let callers = try (0..<2).map { _ in try BusConnection(address: stack.busAddress) }
        let known = service.startedRecognitions
        let (writers, streams) = try Streams.twoEach(quiet + speech, from: callers,
                                                     options: ["silence_seconds": .double(1), "partial_results": .boolean(true)],
                                                     keepOpen: true)
        let ids = try await service.waitForNewRecognitions(4, besides: known)
        try await waitForPartials(ids, words: 2)

        let other = try BusConnection(address: stack.busAddress)
        try await Streams.answeredBeside([], of: service, on: other)
        var ended = 0
        for caller in callers { try await ServiceHarness.call("StopRecognition", on: caller) }
        for stream in streams {
            let heard = try await stream.value
            if heard.reason == "endpoint" {
                ended += 1
                XCTAssertTrue(heard.text.hasPrefix("go forward"), heard.text)
            } else {
                XCTAssertEqual(heard.reason, "stopped")
            }
        }
        XCTAssertGreaterThan(ended, 0, "none gave its decoder up")
        for writer in writers { writer.closeReadEnd() }
        for connection in callers + [other] { await connection.close() }
    }
}
