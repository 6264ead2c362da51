@testable import TestSupport
import XCTest
@testable import VoiceboxCore

/// The file loop the service and the engine's tests share, over a scripted decoder.
final class FileReadingTests: XCTestCase {
    private func samples(_ loud: Bool, _ count: Int) -> [Int16] { [Int16](repeating: loud ? 5000 : 0, count: count) }

    func testAFileIsCutAtEveryPauseAndReadToItsEnd() async throws {
        let file = FakeFile(samples: samples(true, 2048) + samples(false, 2048) + samples(true, 2048) + samples(false, 1000))
        var seen: [(Double, Int)] = []
        let outcome = try await FileReading.read(file, through: FakeDecoder(warmUp: 0), afterChunk: { seconds, segments in
            seen.append((seconds, segments.count))
        })
        XCTAssertEqual(outcome.segments.map(\.text), ["w1", "w2"], "one utterance per stretch of speech, none empty")
        XCTAssertEqual(outcome.result.text, "w1 w2")
        XCTAssertEqual(outcome.seconds, 7144.0 / 16000, accuracy: 1e-12)
        XCTAssertEqual(outcome.end, .endOfFile)
        XCTAssertEqual(seen.map(\.0), [2048, 4096, 6144, 7144].map { Double($0) / 16000 })
        XCTAssertEqual(seen.map(\.1), [0, 1, 1, 2])
    }

    func testMaxSecondsCutsTheLastChunk() async throws {
        let outcome = try await FileReading.read(FakeFile(samples: samples(true, 16000)), through: FakeDecoder(warmUp: 0),
                                           maxSeconds: 0.2)
        XCTAssertEqual(outcome.seconds, 0.2)
        XCTAssertEqual(outcome.end, .maxDuration)
        XCTAssertEqual(outcome.result.text, "w1 w2", "2048 then 1152 samples")
    }

    func testLongSpeechIsCutIntoSegments() async throws {
        let outcome = try await FileReading.read(FakeFile(samples: samples(true, 2048 * 4)), through: FakeDecoder(warmUp: 0),
                                           maxSegmentSeconds: 2048.0 * 2 / 16000)
        XCTAssertEqual(outcome.segments.map(\.text), ["w1 w2", "w3 w4"])
    }

    func testStopKeepsWhatWasHeardAndAThrowAbandons() async throws {
        var asked = 0
        let stopped = try await FileReading.read(FakeFile(samples: samples(true, 2048 * 4)), through: FakeDecoder(warmUp: 0),
                                           shouldStop: { asked += 1; return asked > 2 })
        XCTAssertEqual(stopped.end, .stopped)
        XCTAssertEqual(stopped.result.text, "w1 w2")
        XCTAssertEqual(stopped.seconds, 4096.0 / 16000)
        do {
            _ = try await FileReading.read(FakeFile(samples: samples(true, 2048)), through: FakeDecoder(warmUp: 0),
                                           shouldStop: { throw CancellationError() })
            XCTFail("a throw abandons the reading")
        } catch {
            XCTAssertTrue(error is CancellationError)
        }
    }

    /// A long file's part reads on past its end only to where one pass would be between
    /// utterances: the first utterance end at or after it; and yields only at utterance ends.
    func testEndAfterReadsOnToTheFirstUtteranceEndAndYieldsOnlyThere() async throws {
        // Silence, speech, speech, silence, silence, speech, silence; the part ends at 1.5 chunks.
        let file = { FakeFile(samples: self.samples(false, 2048) + self.samples(true, 2048 * 2) + self.samples(false, 2048 * 2)
                                  + self.samples(true, 2048) + self.samples(false, 2048)) }
        let outcome = try await FileReading.read(file(), through: FakeDecoder(warmUp: 0), endAfter: 3072)
        XCTAssertEqual(outcome.seconds, 2048.0 * 4 / 16000, "on through the speech to the chunk where it ended")
        XCTAssertEqual(outcome.segments.map(\.text), ["w1 w2"])
        XCTAssertEqual(outcome.end, .endOfFile)
        XCTAssertFalse(outcome.yielded)
        // No utterance end after it: to the end of the file.
        let rest = try await FileReading.read(FakeFile(samples: samples(false, 2048 * 3)), through: FakeDecoder(warmUp: 0), endAfter: 2048)
        XCTAssertEqual(rest.seconds, 2048.0 * 3 / 16000)
        // Asked to yield from the first chunk: not in the silence before any speech (one pass is
        // inside an utterance there), only where the first utterance ended.
        var asked = 0
        let yielded = try await FileReading.read(file(), through: FakeDecoder(warmUp: 0), endAfter: 2048 * 7,
                                           yieldAtPause: { asked += 1; return true })
        XCTAssertTrue(yielded.yielded)
        XCTAssertEqual(yielded.seconds, 2048.0 * 4 / 16000)
        XCTAssertEqual(asked, 1)
    }

    func testAYieldComesOnlyWhereNoUtteranceIsCut() async throws {
        // Speech, silence, speech: asked to yield from the first chunk, it stops at the first
        // pause, after the first utterance, never inside one.
        let file = FakeFile(samples: samples(true, 2048 * 2) + samples(false, 2048) + samples(true, 2048))
        var asked = 0
        let outcome = try await FileReading.read(file, through: FakeDecoder(warmUp: 0), yieldAtPause: { asked += 1; return true })
        XCTAssertTrue(outcome.yielded)
        XCTAssertEqual(outcome.segments.map(\.text), ["w1 w2"])
        XCTAssertEqual(outcome.seconds, 2048.0 * 3 / 16000)
        XCTAssertEqual(asked, 1, "asked only at the pause")
        let rest = try await FileReading.read(file, through: FakeDecoder(warmUp: 0), yieldAtPause: { false })
        XCTAssertFalse(rest.yielded)
        XCTAssertEqual(rest.result.text, "w1", "the rest of the file, in a round of its own")
    }

    func testAYieldInSpeechCutsTheUtteranceWhereItIsAsked() async throws {
        // Unbroken speech: asked to yield inside speech at the second chunk, it ends there with
        // what the decoder heard so far; the rest is read in a round of its own.
        let file = FakeFile(samples: samples(true, 2048 * 4))
        var asked = 0
        let outcome = try await FileReading.read(file, through: FakeDecoder(warmUp: 0), yieldAtPause: { XCTFail("no pause"); return true },
                                           yieldInSpeech: { asked += 1; return asked == 2 })
        XCTAssertTrue(outcome.yielded)
        XCTAssertEqual(outcome.segments.map(\.text), ["w1 w2"])
        XCTAssertEqual(outcome.seconds, 2048.0 * 2 / 16000)
        let rest = try await FileReading.read(file, through: FakeDecoder(warmUp: 0))
        XCTAssertFalse(rest.yielded)
        XCTAssertEqual(rest.result.text, "w1 w2")
    }

    func testAShortUtteranceCutInSpeechIsGivenBackWholeToBeHeardAgain() async throws {
        // Speech, a pause, then speech cut at its second chunk: the finished utterance is kept,
        // the cut one comes back as audio (from the end of the last utterance) beside its words.
        let file = FakeFile(samples: samples(true, 2048) + samples(false, 2048) + samples(true, 2048 * 3))
        var asked = 0
        let outcome = try await FileReading.read(file, through: FakeDecoder(warmUp: 0),
                                           yieldInSpeech: { asked += 1; return asked == 3 }, replaySeconds: 1)
        XCTAssertTrue(outcome.yielded)
        XCTAssertEqual(outcome.segments.map(\.text), ["w1"])
        XCTAssertEqual(outcome.seconds, 2048.0 * 2 / 16000, "the reading ends where the cut utterance began")
        XCTAssertEqual(outcome.unfinished?.audio, samples(true, 2048 * 2))
        XCTAssertEqual(outcome.unfinished?.heard.text, "w2 w3", "what was heard up to the cut, to keep if nothing hears it again")
        // Longer than replaySeconds: cut where asked, as without a replay.
        asked = 0
        let long = try await FileReading.read(FakeFile(samples: samples(true, 2048 * 4)), through: FakeDecoder(warmUp: 0),
                                        yieldInSpeech: { asked += 1; return asked == 3 }, replaySeconds: 0.2)
        XCTAssertEqual(long.segments.map(\.text), ["w1 w2 w3"])
        XCTAssertNil(long.unfinished)
        XCTAssertEqual(long.seconds, 2048.0 * 3 / 16000)
    }

    func testTheReplayCountsFromJustBeforeTheSpeechNotFromTheSilenceBefore() async throws {
        // 12 s of silence, then speech cut at its second chunk: the silence is no part of the
        // utterance to hear again but its last 1.5 s (the detector's warm-up).
        let silence = 2048 * 94  // 12 s, whole chunks
        let file = FakeFile(samples: samples(false, silence) + samples(true, 2048 * 3))
        var asked = 0
        let outcome = try await FileReading.read(file, through: FakeDecoder(warmUp: 0),
                                           yieldInSpeech: { asked += 1; return asked == 2 }, replaySeconds: 10)
        let replayed = try XCTUnwrap(outcome.unfinished, "12 s of silence and 0.26 s of speech: a 1.76 s utterance")
        XCTAssertEqual(replayed.audio, samples(false, FileReading.preRoll) + samples(true, 2048 * 2))
        XCTAssertEqual(outcome.seconds, Double(silence - FileReading.preRoll) / 16_000)
    }
}

