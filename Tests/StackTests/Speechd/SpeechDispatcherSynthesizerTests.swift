import Foundation
@testable import TestSupport
import VoiceboxCore
import XCTest
@testable import VoiceboxSpeechd

/// Against a real speech-dispatcher (`SPEECHD_ADDRESS`): voices, speaking, stopping, priorities,
/// pause. Every wait is bounded; the tests assert what happens and in which order.
final class SpeechDispatcherSynthesizerTests: SynthesizerTestCase {
    // MARK: Voices

    func testListVoicesIsNonEmptyWithEnglishVoicesAndUniqueIds() async throws {
        let (synthesizer, _) = try await connected(try TestStack.address())
        let start = ContinuousClock.now
        let voices = try await listVoices(synthesizer)
        let elapsed = ContinuousClock.now - start
        print("listVoices: \(voices.count) voices from \(Set(voices.map(\.engine)).sorted()) in \(elapsed)")

        XCTAssertFalse(voices.isEmpty)
        XCTAssertEqual(Set(voices.map(\.id)).count, voices.count, "ids must be unique")
        for voice in voices { XCTAssertEqual(voice.id, "\(voice.engine)/\(voice.name)") }
        let english = voices.filter { $0.language.lowercased().hasPrefix("en") }
        XCTAssertFalse(english.isEmpty, "no English voice")
        if voices.contains(where: { $0.engine == "espeak-ng" }) {
            XCTAssertTrue(voices.contains { $0.id == "espeak-ng/English (Great Britain)" && $0.variant == "none"
                    && $0.language.lowercased() == "en-gb" })
        }
        // A second listing gives the same ids (stable).
        let again = try await listVoices(synthesizer)
        XCTAssertEqual(again.map(\.id), voices.map(\.id))
    }

    func testListVoicesThrowsUnavailableWithoutServer() async throws {
        _ = try TestStack.address()
        let server = try await ownSpeechd(config: try TestStack.configDirectory(), start: false) // never started
        let (synthesizer, _) = make(server.address)
        do {
            _ = try await listVoices(synthesizer)
            XCTFail("listed voices of no server")
        } catch SynthesizerError.unavailable {
        }
    }

    // MARK: Speaking

    func testSpeakEmitsStartedThenFinishedDone() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        let spoken = ContinuousClock.now
        try await synthesizer.speak(SynthesisRequest(id: 7, text: "Hello from voice box."))
        let value3 = await recorder.end(of: 7, timeout: 20)
        XCTAssertEqual(value3, .done)
        XCTAssertEqual(recorder.events(for: 7), [.started(7), .finished(7, .done)])
        if let started = recorder.time(of: .started(7)), let finished = recorder.time(of: .finished(7, .done)) {
            print("speak() to .started: \(started - spoken); spoken for \(finished - started)")
        }
    }

    func testSpeakRightAfterInitWaitsForTheFirstConnection() async throws {
        let (synthesizer, recorder) = make(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "Straight away."))
        XCTAssertEqual(recorder.events.first, .available)
        let end = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(end, .done)
    }

    func testEveryParameterAndAVoiceFromTheListAreAccepted() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        let voices = try await listVoices(synthesizer)
        let voice = try XCTUnwrap(voices.first { $0.language.lowercased().hasPrefix("en") && $0.variant != "none" })
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "Quick and high.", voice: voice, rate: 2, pitch: 1.5,
                                                     volume: 0.5))
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Slow and low.", language: "en", rate: 0.5,
                                                     pitch: 0.5))
        try await synthesizer.speak(SynthesisRequest(id: 3, text: "Extremes.", rate: 100, pitch: 0.01, volume: 7))
        for id: UInt64 in 1...3 {
            let value4 = await recorder.end(of: id, timeout: 20)
            XCTAssertEqual(value4, .done, "utterance \(id)")
        }
        XCTAssertEqual(recorder.events.filter { !Self.isUnavailable($0) && $0 != .available },
                       [.started(1), .finished(1, .done), .started(2), .finished(2, .done),
                        .started(3), .finished(3, .done)])
    }

    func testSSMLMarksAreReportedBetweenStartAndEnd() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(
            id: 1, text: #"Hello <mark name="one"/> there <mark name="two"/> world."#, ssml: true))
        let value5 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value5, .done)
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .mark(1, "one"), .mark(1, "two"), .finished(1, .done)])
    }

    func testDuplicateIdIsRejected() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        do {
            try await synthesizer.speak(SynthesisRequest(id: 1, text: "again"))
            XCTFail("accepted a duplicate id")
        } catch SynthesizerError.rejected {
        }
        await synthesizer.stop([1])
        let value6 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value6, .cancelled)
    }

    // MARK: Stopping

    func testStopOfSpokenUtteranceGivesCancelled() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        let value7 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value7)
        await synthesizer.stop([1])
        let value8 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value8, .cancelled)
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .finished(1, .cancelled)])
        // The connection still speaks afterwards.
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Next."))
        let value9 = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(value9, .done)
    }

    func testStopOfQueuedUtteranceKeepsTheCurrentOne() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "One, two, three, four, five, six, seven."))
        try await synthesizer.speak(SynthesisRequest(id: 2, text: SynthesisRequest.longText))
        try await synthesizer.speak(SynthesisRequest(id: 3, text: "Three."))
        let value10 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value10)
        await synthesizer.stop([2])
        let value11 = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(value11, .cancelled)
        let value12 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value12, .done)
        let value13 = await recorder.end(of: 3, timeout: 20)
        XCTAssertEqual(value13, .done)
        XCTAssertEqual(recorder.events(for: 2), [.finished(2, .cancelled)], "a stopped queued utterance never starts")
        XCTAssertEqual(recorder.events(for: 3), [.started(3), .finished(3, .done)])
    }

    func testStopOfEverythingCancelsAll() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        for id: UInt64 in 1...3 {
            try await synthesizer.speak(SynthesisRequest(id: id, text: SynthesisRequest.longText))
        }
        let value14 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value14)
        await synthesizer.stop([3, 1, 2])
        for id: UInt64 in 1...3 {
            let value15 = await recorder.end(of: id, timeout: 20)
            XCTAssertEqual(value15, .cancelled)
        }
        try await synthesizer.speak(SynthesisRequest(id: 4, text: "Still here."))
        let value16 = await recorder.end(of: 4, timeout: 20)
        XCTAssertEqual(value16, .done)
        // speech-dispatcher speaks in order: had 2 or 3 been left in it, they would have begun before 4.
        XCTAssertEqual(recorder.events.filter { if case .started = $0 { true } else { false } }, [.started(1), .started(4)])
    }

    // MARK: Priorities

    /// Measured with speech-dispatcher 0.11.4: an important message cancels our message being spoken
    /// (reported as CANCEL: `.interrupted`), speaks, and a message still queued behind waits and is
    /// spoken afterwards.
    func testImportantInterruptsTheSpokenMessageAndPostponesQueuedOnes() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Queued message."))
        let value17 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value17)
        try await synthesizer.speak(SynthesisRequest(id: 3, text: "Important.", priority: .important))

        let value18 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value18, .interrupted)
        let value19 = await recorder.end(of: 3, timeout: 20)
        XCTAssertEqual(value19, .done)
        let value20 = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(value20, .done)
        let events = recorder.events.filter { $0 != .available }
        XCTAssertEqual(events, [.started(1), .finished(1, .interrupted), .started(3), .finished(3, .done),
                                .started(2), .finished(2, .done)])
    }

    /// Measured: a text-priority message is cancelled by the next text or message; a notification
    /// that arrives while something is spoken is dropped at once (CANCEL before it ever begins).
    func testTextIsReplacedAndNotificationIsDroppedWhileSpeaking() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText, priority: .text))
        let value21 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value21)
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Notification.", priority: .notification))
        let value22 = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(value22, .interrupted)
        try await synthesizer.speak(SynthesisRequest(id: 3, text: "Newer text.", priority: .text))
        let value23 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value23, .interrupted)
        let value24 = await recorder.end(of: 3, timeout: 20)
        XCTAssertEqual(value24, .done)
        XCTAssertEqual(recorder.events(for: 2), [.finished(2, .interrupted)])
    }

    // MARK: Pause

    func testPauseHoldsAndResumeSpeaksAgain() async throws {
        let address = try TestStack.address()
        let (synthesizer, recorder) = try await connected(address)
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "Pause me. I will go on after the pause."))
        let value25 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value25)
        try await synthesizer.pause()
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Said after the resume."))
        // Meanwhile another program's message is spoken to its end (the window in which ours would
        // have shown, had they not been held). Whether speech-dispatcher really fell silent is heard
        // on the sink: SpeechTests.testPauseAndResume.
        let other = try RawSSIPClient(address: address, name: "meanwhile")
        try other.command("SET self PRIORITY message")
        let otherID = try XCTUnwrap(try other.speakRaw(RawSSIPClient.escaped("Meanwhile.")))
        XCTAssertTrue(other.waitForEvent(702, message: otherID, timeout: 20), "the other program was not heard")
        XCTAssertEqual(recorder.events(for: 1), [.started(1)], "nothing ends while paused")
        XCTAssertEqual(recorder.events(for: 2), [], "nothing starts while paused")

        try await synthesizer.resume()
        let value26 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value26, .done)
        let value27 = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(value27, .done)
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .finished(1, .done)])
        XCTAssertEqual(recorder.events(for: 2), [.started(2), .finished(2, .done)])

        // Stopping a paused utterance, and speech-dispatcher still speaks afterwards.
        try await synthesizer.pause()
        try await synthesizer.speak(SynthesisRequest(id: 3, text: "Never said."))
        await synthesizer.stop([3])
        let value28 = await recorder.end(of: 3, timeout: 20)
        XCTAssertEqual(value28, .cancelled)
        try await synthesizer.resume()
        try await synthesizer.speak(SynthesisRequest(id: 4, text: "Not wedged."))
        let value29 = await recorder.end(of: 4, timeout: 20)
        XCTAssertEqual(value29, .done)
    }

    func testShutdownCancelsUtterancesAndFinishesTheStream() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        let value37 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value37)
        synthesizer.shutdown()
        let value38 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value38, .cancelled)
        do {
            try await synthesizer.speak(SynthesisRequest(id: 2, text: "After."))
            XCTFail("spoke after shutdown")
        } catch SynthesizerError.unavailable {
        }
        synthesizer.shutdown() // idempotent
    }
}

