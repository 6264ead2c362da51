import Foundation
@testable import TestSupport
import Glibc
import VoiceboxBus
import VoiceboxContract
import XCTest

/// Recognize through a real voiceboxd, PulseAudio and the real en-US model. The fake microphone
/// (the stack's default source) hears whatever is played into VOICEBOX_TEST_MIC_SINK.
final class RecognitionTests: ServiceTestCase {
    override class var sharesService: Bool { true }
    override class var usesRecordings: Bool { true }

    // MARK: Files

    func testGoForwardFromAFile() async throws {
        let service = self.service!
        let recognized = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(recognized.text, "go forward ten meters")
        XCTAssertEqual(recognized.reason, "end_of_file")
        XCTAssertEqual(recognized.language, "en-US")
        XCTAssertEqual(recognized.duration, 89160.0 / 2 / 16000, accuracy: 1e-6)
        XCTAssertEqual(recognized.words.map(\.word), ["go", "forward", "ten", "meters"])
        XCTAssert((0...1).contains(recognized.confidence), "\(recognized.confidence)")
        for (word, next) in zip(recognized.words, recognized.words.dropFirst()) {
            XCTAssertLessThan(word.start, word.end)
            XCTAssertLessThanOrEqual(word.end, next.start + 0.0101)
        }
        // The same words as the bare tool.
        XCTAssertEqual(recognized.text, try pocketsphinxContinuous(Recordings.path("goforward.raw")))

        // Signals: started, progress up to 1, finished with the text; no levels for a file.
        let signals = service.recognitionSignals(of: recognized.id)
        XCTAssertEqual(signals.first?.member, "RecognitionStarted")
        XCTAssertEqual(signals.last?.member, "RecognitionFinished")
        XCTAssertEqual(signals.last?.arguments.last?.string, "go forward ten meters")
        let progress = signals.filter { $0.member == "RecognitionProgress" }.compactMap { $0.arguments.last?.double }
        XCTAssertEqual(progress.last, 1)
        XCTAssertEqual(progress, progress.sorted())
        XCTAssertFalse(signals.contains { $0.member == "AudioLevel" })
    }

    /// cards/*.wav with cards.gram say what cards.transcription says, except that on 001 the model
    /// hears a "five" in the opening noise: exactly what the bare tool prints too.
    func testCardsWithTheirGrammarAsTheBareToolHearsThem() async throws {
        let service = self.service!
        let grammar = try Recordings.cardsGrammar()
        let transcription = try Recordings.cardsTranscription()
        XCTAssertEqual(transcription.count, 5)
        for (id, said) in transcription.sorted(by: { $0.key < $1.key }) {
            let file = Recordings.path("cards/\(id).wav")
            let recognized = try await service.recognize(["file": .string(file), "grammar": .string(grammar)])
            let bare = try pocketsphinxContinuous(file, ["-jsgf", Recordings.path("cards/cards.gram")])
            XCTAssertEqual(recognized.text, bare, id)
            XCTAssertEqual(recognized.text, id == "001" ? "five " + said : said, id)
        }
    }

    func testTheSameSpeechInOtherFormatsAndRates() async throws {
        let (service, directory) = (self.service!, self.directory!)
        let raw = Recordings.path("goforward.raw")
        let conversions: [(name: String, effects: [String])] = [
            ("goforward.wav", []), ("goforward.flac", []), ("goforward-44k-stereo.wav", ["rate", "44100", "channels", "2"]),
        ]
        for (name, effects) in conversions {
            let target = directory.appendingPathComponent(name).path
            try Recordings.sox(raw: raw, to: target, effects: effects)
            let recognized = try await service.recognize(["file": .string(target)])
            XCTAssertEqual(recognized.text, "go forward ten meters", name)
            XCTAssertEqual(recognized.duration, 2.786, accuracy: 0.01, name)
        }
    }

    func testMaxSecondsLanguageFallbackAndKeyphrasesOnAFile() async throws {
        let service = self.service!
        let cut = try await service.recognize(["file": .string(Recordings.path("numbers.raw")), "max_seconds": .double(1.5)])
        XCTAssertEqual(cut.reason, "max_duration")
        XCTAssertEqual(cut.duration, 1.5, accuracy: 1e-9)
        XCTAssertLessThanOrEqual(cut.words.last?.end ?? 0, 1.5 + 0.011)

        let british = try await service.recognize(["file": .string(Recordings.path("goforward.raw")), "language": .string("en-GB")])
        XCTAssertEqual(british.language, "en-US", "en-GB is heard with the English model, and the answer says so")
        XCTAssertEqual(british.text, "go forward ten meters")

        let spotted = try await service.recognize(["file": .string(Recordings.path("goforward.raw")),
                                                   "keyphrases": .stringArray(["forward"])])
        XCTAssertEqual(spotted.text, "forward")
    }

    /// Files decode at once up to one per core; the rest wait their turn, round-robin by caller,
    /// and start when a decoder frees. Stop and cancel reach running and waiting files alike.
    func testFilesBeyondTheCoresWaitTheirTurnAndStopAndCancelReachThem() async throws {
        let (service, stack, directory) = (self.service!, self.stack!, self.directory!)
        // About a minute of speech: it decodes for several seconds.
        let long = directory.appendingPathComponent("long.wav").path
        let parts = Array(repeating: Recordings.path("goforward.raw"), count: 20)
        let made = try runProgram(["sox"] + parts.flatMap { ["-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1", $0] } + [long])
        XCTAssertEqual(made.status, 0)
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let other = try BusConnection(address: stack.busAddress)
        let third = try BusConnection(address: stack.busAddress)
        // All but one on the test's client (cancelled below), one on another (stopped below).
        var running: [Task<Result<Recognized, any Error>, Never>] = []
        var known: [UInt64] = []
        for index in 0..<cores {
            let connection = index == 0 ? other : service.client
            running.append(Task {
                do { return .success(try await ServiceHarness.recognize(on: connection, ["file": .string(long)])) } catch { return .failure(error) }
            })
            known.append(try await service.waitForNewRecognition(besides: known))
        }
        // Every decoder is taken: a third caller's file waits, and so does one more of the client's,
        // which it cancels while it waits.
        let waiting = Task { try await ServiceHarness.recognize(on: third, ["file": .string(Recordings.path("goforward.raw"))]) }
        let cancelledWhileWaiting = Task { () -> DBusError? in
            do {
                _ = try await ServiceHarness.recognize(on: service.client, ["file": .string(Recordings.path("goforward.raw"))])
                return nil
            } catch { return error as? DBusError }
        }
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertEqual(service.startedRecognitions.count, cores, "a file started although every decoder was busy")

        // The client cancels: its running files and the one waiting end with Cancelled; the
        // decoders they free go to the third caller's file.
        try await service.proxy.call(Speech1.cancelRecognition)
        let cancelled = await cancelledWhileWaiting.value
        XCTAssertEqual(cancelled?.name, "org.voicebox.Error.Cancelled", cancelled?.message ?? "it answered")
        for task in running.dropFirst() {
            if case .failure(let error as DBusError) = await task.value {
                XCTAssertEqual(error.name, "org.voicebox.Error.Cancelled")
            } else {
                XCTFail("a cancelled recognition did not fail with Cancelled")
            }
        }
        let turn = try await waiting.value
        XCTAssertEqual(turn.text, "go forward ten meters")
        // Stop reaches the other caller's running file.
        _ = try await ServiceHarness.stop(on: other)
        let stopped = try await running[0].value.get()
        XCTAssertEqual(stopped.reason, "stopped")
        XCTAssertLessThan(stopped.duration, 55, "stopped well before the end of the file")
        XCTAssertEqual(service.startedRecognitions.count, cores + 1, "the file cancelled while it waited never started")
        let after = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(after.text, "go forward ten meters")
        await other.close()
        await third.close()
    }

    // MARK: Microphone

    // MARK: Faults

}
