@testable import TestSupport
import VoiceboxContract
import VoiceboxThreads
import XCTest
@testable import VoiceboxCore

/// RecognitionService over scripted parts: the bookkeeping, the endings and the signals.
final class RecognitionServiceTests: XCTestCase {
    private let bus = RecordingBus()
    private let capture = FakeCapture()
    private let loud = [Int16](repeating: 5000, count: 16_000)
    private let quiet = [Int16](repeating: 0, count: 16_000)

    private func makeService(warmUp: Double = 0, files: [String: [Int16]] = [:], streams: [Int32: ScriptedStream] = [:],
                             maxFiles: Int = 2, engine: FakeEngine? = nil,
                             replayBudget: Int = RecognitionService.replayBudgetBytes, bounds: Bounds = Bounds()) -> RecognitionService {
        RecognitionService(engine: engine ?? FakeEngine(warmUp: warmUp), capture: capture, files: FakeFiles(files: files),
                           streams: FakeStreams(streams: streams), bus: bus,
                           maxFileRecognitions: maxFiles, replayBudgetBytes: replayBudget, bounds: bounds)
    }

    /// Whether `id` has sent RecognitionFinished yet.
    private func finished(_ id: UInt64) -> Bool {
        bus.signals.contains { if case .recognitionFinished(id, _) = $0 { true } else { false } }
    }

    private func options(_ values: [String: OptionValue] = [:]) throws -> RecognizeOptions {
        try RecognizeOptions(values)
    }

    /// The microphone the service opened (waits for it).
    private func microphone(_ index: Int = 0) async throws -> FakeStream {
        try await waitFor("the microphone to open") { self.capture.streams.count > index }
        return capture.streams[index]
    }

    /// The microphone the service opened for recognition `id`, once the recognition has it
    /// (RecognitionStarted): a request before then ends the recognition before it listens.
    private func listening(_ id: UInt64, microphone index: Int = 0) async throws -> FakeStream {
        let stream = try await microphone(index)
        try await waitFor("RecognitionStarted") { self.bus.signals.contains(.recognitionStarted(id)) }
        return stream
    }

    private func errorKind(_ body: () async throws -> Void) async -> VoiceboxError.Kind? {
        do {
            try await body()
            return nil
        } catch let error as VoiceboxError {
            return error.kind
        } catch {
            XCTFail("not a VoiceboxError: \(error)")
            return nil
        }
    }

    func testAFileIsReadToTheEndWithProgress() async throws {
        let service = makeService(files: ["/a.wav": quiet + loud + quiet])
        await service.run()
        let done = try await service.start(options(["file": .string("/a.wav")]), caller: ":1.1").outcome()
        XCTAssertEqual(done.end, .endOfFile)
        XCTAssertEqual(done.duration, 3, accuracy: 1e-9)
        XCTAssertEqual(done.language, "en-US")
        XCTAssertFalse(done.result.text.isEmpty)
        let signals = bus.signals
        XCTAssertEqual(signals.first, .recognitionStarted(done.id))
        XCTAssertEqual(signals.last, .recognitionFinished(done.id, done.result.text))
        XCTAssertTrue(signals.contains(.recognitionProgress(done.id, 1)))
        XCTAssertEqual(bus.properties, [.listening(false), .listeningID(0), .dictationID(0), .recognitionLanguages(["de-DE", "en-US"])],
                       "a file recognition is not the microphone's: ListeningID stays 0")
        XCTAssertEqual(bus.watchedCallers, [], "no watch left once the caller has no recognition")
    }

    func testAStreamIsReadToItsEndWithoutTheMicrophone() async throws {
        let service = makeService(streams: [5: ScriptedStream(samples: quiet + loud + quiet)])
        await service.run()
        let done = try await service.start(options(["stream": .descriptor(5), "partial_results": .bool(true)]), caller: ":1.1").outcome()
        XCTAssertEqual(done.end, .endOfFile)
        XCTAssertEqual(done.duration, 3, accuracy: 1e-9)
        XCTAssertFalse(done.result.text.isEmpty)
        let signals = bus.signals
        XCTAssertEqual(signals.first, .recognitionStarted(done.id))
        XCTAssertEqual(signals.last, .recognitionFinished(done.id, done.result.text))
        XCTAssertTrue(signals.contains { if case .audioLevel(done.id, _) = $0 { true } else { false } }, "levels as the microphone's")
        XCTAssertTrue(signals.contains { if case .recognitionPartial(done.id, _) = $0 { true } else { false } })
        XCTAssertEqual(bus.properties, [.listening(false), .listeningID(0), .dictationID(0), .recognitionLanguages(["de-DE", "en-US"])],
                       "a stream does not take the microphone")
    }

    func testAStreamWithSilenceSecondsEndsAtTheEndOfSpeech() async throws {
        let service = makeService(streams: [5: ScriptedStream(samples: loud + quiet + quiet + loud, stallsAfter: true)])
        let done = try await service.start(options(["stream": .descriptor(5), "silence_seconds": .double(0.5)]), caller: ":1.1").outcome()
        XCTAssertEqual(done.end, .endpoint)
        XCTAssertEqual(done.duration, 1.5, accuracy: 0.06, "1 s of speech, then 0.5 s of silence")
    }

    func testAStalledStreamEndsWithWhatWasHeardAfterTheIdleBound() async throws {
        let service = makeService(streams: [5: ScriptedStream(samples: loud, stallsAfter: true)])
        let started = ContinuousClock.now
        let done = try await service.start(options(["stream": .descriptor(5), "stream_idle_seconds": .double(0.3)]),
                                           caller: ":1.1").outcome()
        XCTAssertEqual(done.end, .timeout)
        XCTAssertFalse(done.result.text.isEmpty, "what was heard before the stall")
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .milliseconds(300), "not before the idle bound")
    }

    /// Stalls of an hour's idle bound, which park and release the decoder only after an hour
    /// too: only the stop's wake (or the caller leaving) ends them. (With the standard release,
    /// the read would come back after 2 s and see the stop then.)
    func testAStalledStreamIsStoppedOrCancelledAtOnce() async throws {
        let service = makeService(streams: [5: ScriptedStream(samples: loud, stallsAfter: true),
                                            6: ScriptedStream(samples: loud, stallsAfter: true)],
                                  bounds: Bounds([.streamPark: .seconds(3600), .streamRelease: .seconds(3600)]))
        let stopped = try await service.start(options(["stream": .descriptor(5), "stream_idle_seconds": .double(3600),
                                                        "partial_results": .bool(true)]), caller: ":1.1")
        // Its audio heard (RecognitionStarted comes before the first read): then the stall.
        try await waitFor("the stream's audio heard") {
            self.bus.signals.contains { if case .recognitionPartial(stopped.id, _) = $0 { true } else { false } }
        }
        await service.stopRecognition(caller: ":1.1")
        let done = try await outcome(of: stopped)
        XCTAssertEqual(done.end, .stopped)
        XCTAssertFalse(done.result.text.isEmpty)

        let cancelled = try await service.start(options(["stream": .descriptor(6), "stream_idle_seconds": .double(3600)]), caller: ":1.2")
        try await waitFor("the stream to start") { self.bus.signals.contains(.recognitionStarted(cancelled.id)) }
        bus.vanish(":1.2")
        let kind = await errorKind { _ = try await cancelled.outcome() }
        XCTAssertEqual(kind, .cancelled, "a caller that left cancels its stream")
    }

    /// Four callers' streams of unbroken speech hold every stream decoder; a fifth caller's
    /// stream waits, and one of them is asked to cut its utterance (after its hold in speech,
    /// 1.5 s here, and 1.5 s asked). The utterance is short enough to be heard again: the next
    /// decoder hears it from its start, so that stream's words are one unbroken run, as if no cut
    /// had come (a cut stream's words would start again at w1, the next decoder's first).
    func testAStreamCutInsideAShortUtteranceHearsItAgainWhole() async throws {
        try await cutOneOfFourStreams(replayBudget: RecognitionService.replayBudgetBytes)
    }

    /// With the replay budget spent (here: none), the utterance is cut where it is: what the first
    /// decoder heard, then what the next one hears (its words start again at w1), none twice.
    func testPastTheReplayBudgetAStreamIsCutWhereItIs() async throws {
        try await cutOneOfFourStreams(replayBudget: 0)
    }

    /// The holds these tests make small: a stream cuts its utterance 1.5 s after it took its
    /// decoder and was asked.
    private let smallHolds = Bounds([.streamHoldInSpeech: .milliseconds(1500), .streamCut: .milliseconds(1500)])

    private func cutOneOfFourStreams(replayBudget: Int) async throws {
        // 2.3 s, one word per chunk: the first stream is cut at 1.5 s; the others end before they
        // are (the next is asked to cut 1.5 s after the first gave way and waits again).
        let speech = [Int16](repeating: 5000, count: 2048 * 18)
        var scripts: [Int32: ScriptedStream] = [:]
        for fd in Int32(1)...5 { scripts[fd] = ScriptedStream(samples: speech, realTime: true) }
        let engine = FakeEngine()
        let service = makeService(streams: scripts, maxFiles: 5, engine: engine, replayBudget: replayBudget, bounds: smallHolds)
        var started: [PendingRecognition] = []
        for fd in Int32(1)...4 {
            started.append(try await service.start(options(["stream": .descriptor(fd)]), caller: ":1.\(fd)"))
        }
        try await waitFor("four streams to start") { started.allSatisfy { self.bus.signals.contains(.recognitionStarted($0.id)) } }
        let waiting = try await service.start(options(["stream": .descriptor(5)]), caller: ":1.5")
        let all = (1...18).map { "w\($0)" }.joined(separator: " ")
        var cutWhereItWas = 0
        for handle in started {
            let done = try await handle.outcome()
            XCTAssertEqual(done.duration, Double(speech.count) / 16_000, accuracy: 1e-9)
            if replayBudget > 0 {
                XCTAssertEqual(done.result.text, all, "recognition \(handle.id)")
            } else if done.result.text != all {
                // w1...wk from the first decoder, w1...w(18-k) from the next.
                let restart = done.result.words.dropFirst().firstIndex { $0.word == "w1" } ?? 0
                XCTAssertEqual(done.result.words.count, 18, done.result.text)
                XCTAssertEqual(done.result.words[restart...].map(\.word), (1...(18 - restart)).map { "w\($0)" })
                cutWhereItWas += 1
            }
        }
        XCTAssertEqual(cutWhereItWas, replayBudget > 0 ? 0 : 1)
        let last = try await waiting.outcome()
        XCTAssertEqual(last.result.text, all)
        XCTAssertEqual(engine.made.withLock { $0 }, 6, "one stream cut for the fifth (5 streams, 6 decoders)")
    }

    /// The same cut, but every stream is stopped as soon as the fifth has the decoder: the cut
    /// stream, waiting to hear its utterance again, keeps what it heard of it up to the cut.
    func testAStreamStoppedBeforeItHearsItsCutUtteranceAgainKeepsItsWords() async throws {
        let speech = [Int16](repeating: 5000, count: 2048 * 60)
        var scripts: [Int32: ScriptedStream] = [:]
        for fd in Int32(1)...5 { scripts[fd] = ScriptedStream(samples: speech, realTime: true) }
        let service = makeService(streams: scripts, maxFiles: 5, bounds: smallHolds)
        var started: [PendingRecognition] = []
        for fd in Int32(1)...4 {
            started.append(try await service.start(options(["stream": .descriptor(fd)]), caller: ":1.\(fd)"))
        }
        try await waitFor("four streams to start") { started.allSatisfy { self.bus.signals.contains(.recognitionStarted($0.id)) } }
        let waiting = try await service.start(options(["stream": .descriptor(5)]), caller: ":1.5")
        try await waitFor("the fifth to start", timeout: .seconds(10)) { self.bus.signals.contains(.recognitionStarted(waiting.id)) }
        for handle in started + [waiting] { await service.endRecognition(handle.id, cancel: false) }
        for handle in started {
            let done = try await handle.outcome()
            let words = Int((done.duration * 16_000).rounded()) / 2048
            XCTAssertGreaterThan(words, 10, "recognition \(handle.id) heard 1.5 s and more")
            XCTAssertEqual(done.result.text, (1...words).map { "w\($0)" }.joined(separator: " "), "recognition \(handle.id)")
        }
    }

    /// A stream waits for the one decoder as a file does, and starts once the file before it has
    /// ended; its writer stalls (an hour's idle bound), and the next file in line is answered
    /// while the stream still waits for its writer: it gave the decoder back (`stream-park`).
    func testStreamsWaitForADecoderAsFilesDoAndAStalledOneGivesItBack() async throws {
        let service = makeService(files: ["/a.wav": loud + loud + loud],
                                  streams: [5: ScriptedStream(samples: loud + loud + loud, stallsAfter: true), 6: ScriptedStream(samples: loud)],
                                  maxFiles: 1, bounds: Bounds([.streamPark: .milliseconds(50), .streamRelease: .milliseconds(200)]))
        let first = try await service.start(options(["file": .string("/endless")]), caller: ":1.1")
        try await waitFor("the file to start") { self.bus.signals.contains(.recognitionStarted(first.id)) }
        let stream = try await service.start(options(["stream": .descriptor(5), "stream_idle_seconds": .double(3600)]), caller: ":1.2")
        await service.endRecognition(first.id, cancel: false)
        try await waitFor("the stream to start") { self.bus.signals.contains(.recognitionStarted(stream.id)) }
        let started = bus.signals.firstIndex(of: .recognitionStarted(stream.id)) ?? 0
        XCTAssertTrue(bus.signals[..<started].contains { if case .recognitionFinished(first.id, _) = $0 { true } else { false } },
                      "the stream started while the file held the one decoder")
        // The stream's writer stalls: its decoder goes to the next in line, not after the idle bound.
        let file = try await service.start(options(["file": .string("/a.wav")]), caller: ":1.3")
        let done = try await outcome(of: file)
        XCTAssertEqual(done.end, .endOfFile)
        XCTAssertFalse(finished(stream.id), "the stream had ended: the test proves nothing")
        await service.endRecognition(stream.id, cancel: false)
        let stopped = try await stream.outcome()
        XCTAssertEqual(stopped.end, .stopped)
        let other = try await service.start(options(["stream": .descriptor(6)]), caller: ":1.2").outcome()
        XCTAssertEqual(other.end, .endOfFile)
    }

    func testABadStreamIsAnInvalidArgument() async throws {
        let service = makeService()
        let stream = try options(["stream": .descriptor(99)])
        do throws(VoiceboxError) {
            _ = try await service.start(stream, caller: ":1.1").outcome()
            XCTFail("a character device was read")
        } catch {
            XCTAssertEqual(error.kind, .invalidArgument)
            XCTAssertEqual(error.message, "option 'stream': it is a character device")
        }
    }

    func testAFileLongerThanADayIsRefusedUnlessPartOfItIsAsked() async throws {
        let service = makeService()
        let whole = try options(["file": .string("/huge")])
        do throws(VoiceboxError) {
            _ = try await service.start(whole, caller: ":1.1").outcome()
            XCTFail("a file of 100,000 s was read")
        } catch {
            XCTAssertEqual(error.kind, .tooLarge)
            XCTAssertTrue(error.message.contains("max_seconds"), error.message)
        }
        let part = try await service.start(options(["file": .string("/huge"), "max_seconds": .double(0.5)]), caller: ":1.1").outcome()
        XCTAssertEqual(part.end, .maxDuration)
        XCTAssertEqual(part.duration, 0.5, accuracy: 1e-9)
    }

    func testMaxSecondsCutsAFile() async throws {
        let service = makeService(files: ["/a.wav": loud + loud])
        let done = try await service.start(options(["file": .string("/a.wav"), "max_seconds": .double(0.5)]), caller: ":1.1").outcome()
        XCTAssertEqual(done.end, .maxDuration)
        XCTAssertEqual(done.duration, 0.5, accuracy: 1e-9)
    }

    func testTheMicrophoneEndsAfterTheTrailingSilence() async throws {
        let service = makeService()
        let pending = try await service.start(options(["silence_seconds": .double(0.5), "partial_results": .bool(true)]),
                                              caller: ":1.1")
        let mic = try await microphone()
        mic.send(speech: false, count: 3)
        mic.send(speech: true, count: 4)
        mic.send(speech: false, count: 5)
        let done = try await pending.outcome()
        XCTAssertEqual(done.end, .endpoint)
        XCTAssertEqual(done.result.text, "w1 w2 w3 w4")
        XCTAssertEqual(done.duration, 1.2, accuracy: 1e-9)
        XCTAssertTrue(mic.isClosed)
        XCTAssertEqual(bus.properties, [.listeningID(pending.id), .listening(true), .listening(false), .listeningID(0)])
        XCTAssertTrue(bus.signals.contains { if case .audioLevel = $0 { true } else { false } })
        XCTAssertTrue(bus.signals.contains { if case .recognitionPartial(_, "w1") = $0 { true } else { false } })
    }

    /// A model that loads slowly (loaded again after `model-idle`) does not hold the microphone
    /// back: it opens, RecognitionStarted goes out, and what is said meanwhile is decoded once the
    /// model has loaded.
    func testTheMicrophoneRecordsWhileTheModelLoads() async throws {
        let loading = LoadGate()
        let engine = FakeEngine(loading: loading)
        let service = makeService(engine: engine)
        let pending = try await service.start(options(["silence_seconds": .double(0.3), "partial_results": .bool(true)]), caller: ":1.1")
        let mic = try await microphone()
        try await waitFor("RecognitionStarted") { self.bus.signals.contains(.recognitionStarted(pending.id)) }
        XCTAssertEqual(engine.made.withLock { $0 }, 0, "the model is still loading")
        mic.send(speech: true, count: 2)
        mic.send(speech: false, count: 5)
        loading.open()
        let done = try await pending.outcome()
        XCTAssertEqual(done.result.text, "w1 w2", "what was said while the model loaded is heard")
        let partials = bus.signals.compactMap { if case .recognitionPartial(pending.id, let text) = $0 { text } else { nil } }
        XCTAssertEqual(partials.last, "w1 w2", "decoded in a burst, the partials still end with the answer's text: \(partials)")
        XCTAssertEqual(done.end, .endpoint)
        XCTAssertTrue(mic.isClosed)
    }

    /// A stop while the model loads releases the microphone at once (Listening, and the slot:
    /// ListeningID and DictationID, so that the next press of a dictation key starts one), and
    /// answers with what was said once the model has loaded.
    func testAStopWhileTheModelLoadsReleasesAtOnceAndKeepsTheWords() async throws {
        let loading = LoadGate()
        let service = makeService(engine: FakeEngine(loading: loading))
        let stopped = try await service.start(options(["dictation": .bool(true)]), caller: ":1.1")
        let mic = try await listening(stopped.id)
        mic.send(speech: true, count: 2)
        await service.endRecognition(stopped.id, cancel: false)
        XCTAssertTrue(mic.isClosed, "a stop releases the microphone at once, before the model has loaded")
        try await waitFor("the microphone free before the model has loaded") {
            Array(self.bus.properties.suffix(3)) == [.listening(false), .listeningID(0), .dictationID(0)]
        }
        let next = try await service.start(options(), caller: ":1.2")
        // Published at its admission; its Listening may follow at once, as its microphone opens.
        XCTAssertTrue(bus.properties.contains(.listeningID(next.id)), "the next recognition takes the microphone")
        await service.endRecognition(next.id, cancel: true)
        loading.open()
        let done = try await stopped.outcome()
        XCTAssertEqual(done.end, .stopped)
        XCTAssertEqual(done.result.text, "w1 w2", "a stop keeps what was said before it")
    }

    /// What ends a recognition for good while its model loads answers at once, without waiting
    /// for the load: a cancel, a caller leaving, a microphone that fails to open or that fails.
    func testACancelOrAFailureWhileTheModelLoadsAnswersAtOnce() async throws {
        let loading = LoadGate()
        defer { loading.open() }
        let service = makeService(engine: FakeEngine(loading: loading))

        let cancelled = try await service.start(options(), caller: ":1.1")
        let first = try await listening(cancelled.id, microphone: 0)
        await service.endRecognition(cancelled.id, cancel: true)
        try await waitFor("the cancelled recognition's answer") { self.finished(cancelled.id) }
        let kind = await errorKind { _ = try await cancelled.outcome() }
        XCTAssertEqual(kind, .cancelled)
        XCTAssertTrue(first.isClosed)

        let left = try await service.start(options(), caller: ":1.7")
        let second = try await listening(left.id, microphone: 1)
        bus.vanish(":1.7")
        let leftKind = await errorKind { _ = try await left.outcome() }
        XCTAssertEqual(leftKind, .cancelled)
        XCTAssertTrue(second.isClosed)

        let failing = try await service.start(options(), caller: ":1.1")
        try await listening(failing.id, microphone: 2).fail(.serverUnavailable("gone"))
        let failed = await errorKind { _ = try await failing.outcome() }
        XCTAssertEqual(failed, .noMicrophone)

        // A cancel after the microphone was released already (a stop, max_seconds): no recording
        // is left to end, and the cancel still answers at once.
        let stoppedThenCancelled = try await service.start(options(), caller: ":1.1")
        _ = try await listening(stoppedThenCancelled.id, microphone: 3)
        await service.endRecognition(stoppedThenCancelled.id, cancel: false)
        await service.endRecognition(stoppedThenCancelled.id, cancel: true)
        try await waitFor("the answer to a cancel after a stop") { self.finished(stoppedThenCancelled.id) }
        let afterStop = await errorKind { _ = try await stoppedThenCancelled.outcome() }
        XCTAssertEqual(afterStop, .cancelled)
        let cutThenCancelled = try await service.start(options(["max_seconds": .double(0.2)]), caller: ":1.1")
        let cut = try await listening(cutThenCancelled.id, microphone: 4)
        cut.send(speech: true, count: 3)
        try await waitFor("the microphone released at max_seconds") { cut.isClosed }
        await service.endRecognition(cutThenCancelled.id, cancel: true)
        try await waitFor("the answer to a cancel after max_seconds") { self.finished(cutThenCancelled.id) }
        let afterCut = await errorKind { _ = try await cutThenCancelled.outcome() }
        XCTAssertEqual(afterCut, .cancelled)

        capture.failNextOpen(.noMicrophone("no source 'nowhere'"))
        let nowhere = await errorKind { _ = try await service.start(self.options(), caller: ":1.1").outcome() }
        XCTAssertEqual(nowhere, .noMicrophone)
        XCTAssertEqual(bus.properties.last, .listeningID(0), "the microphone is free for the next caller")
    }

    /// max_seconds bounds the recording itself while the model loads.
    func testMaxSecondsReleasesTheMicrophoneWhileTheModelLoads() async throws {
        let loading = LoadGate()
        let service = makeService(engine: FakeEngine(loading: loading))
        let pending = try await service.start(options(["max_seconds": .double(0.5)]), caller: ":1.1")
        let mic = try await listening(pending.id)
        mic.send(speech: true, count: 6)
        try await waitFor("the microphone released at 0.5 s of audio") { mic.isClosed }
        loading.open()
        let done = try await pending.outcome()
        XCTAssertEqual(done.end, .maxDuration)
        XCTAssertEqual(done.duration, 0.5, accuracy: 1e-9)
        XCTAssertEqual(done.result.text, "w1 w2 w3 w4 w5")
    }

    func testAModelThatFailsToLoadReleasesTheMicrophoneAndEndsWhatItStarted() async throws {
        let loading = LoadGate()
        let service = makeService(engine: FakeEngine(loading: loading))
        let pending = try await service.start(options(), caller: ":1.1")
        let mic = try await microphone()
        try await waitFor("RecognitionStarted") { self.bus.signals.contains(.recognitionStarted(pending.id)) }
        loading.open(failing: .engineFailure("the model is damaged"))
        let kind = await errorKind { _ = try await pending.outcome() }
        XCTAssertEqual(kind, .engineUnavailable)
        XCTAssertTrue(mic.isClosed)
        XCTAssertEqual(bus.signals.last, .recognitionFinished(pending.id, ""), "every RecognitionStarted ends with RecognitionFinished")
        XCTAssertEqual(bus.properties.suffix(2), [.listening(false), .listeningID(0)])
    }

    /// A grammar (or key phrases) is checked by the model before the microphone opens: a bad one
    /// never records, nor pauses anyone.
    func testAGrammarIsCheckedBeforeTheMicrophoneOpens() async throws {
        let loading = LoadGate()
        let service = makeService(engine: FakeEngine(loading: loading))
        let bad = try await service.start(options(["grammar": .string("broken")]), caller: ":1.1")
        loading.open()
        let kind = await errorKind { _ = try await bad.outcome() }
        XCTAssertEqual(kind, .invalidArgument)
        XCTAssertEqual(capture.streams.count, 0, "a bad grammar never opened the microphone")
        XCTAssertFalse(bus.signals.contains(.recognitionStarted(bad.id)))
    }

    /// A load made first (a grammar) does not hold up a cancel or a stop either: they answer at once.
    func testACancelOrStopWhileAGrammarLoadsAnswersAtOnce() async throws {
        let loading = LoadGate()
        defer { loading.open() }
        let service = makeService(engine: FakeEngine(loading: loading))
        let cancelled = try await service.start(options(["grammar": .string("#JSGF V1.0; grammar g; public <g> = go;")]), caller: ":1.1")
        await service.endRecognition(cancelled.id, cancel: true)
        let cancelAnswered = Locked(false)
        let cancelAnswer = Task { () -> VoiceboxError.Kind? in
            defer { cancelAnswered.withLock { $0 = true } }
            do {
                _ = try await cancelled.outcome()
                return nil
            } catch {
                return (error as? VoiceboxError)?.kind
            }
        }
        try await waitFor("the cancel's answer, the grammar still loading") { cancelAnswered.withLock { $0 } }
        let kind = await cancelAnswer.value
        XCTAssertEqual(kind, .cancelled)
        let stopped = try await service.start(options(["grammar": .string("#JSGF V1.0; grammar g; public <g> = go;")]), caller: ":1.1")
        await service.endRecognition(stopped.id, cancel: false)
        let stopAnswered = Locked(false)
        let stopAnswer = Task { () -> Recognition in
            defer { stopAnswered.withLock { $0 = true } }
            return try await stopped.outcome()
        }
        try await waitFor("the stop's answer, the grammar still loading") { stopAnswered.withLock { $0 } }
        let done = try await stopAnswer.value
        XCTAssertEqual(done.end, .stopped)
        XCTAssertEqual(done.result.text, "")
        XCTAssertEqual(capture.streams.count, 0, "neither opened the microphone")
        XCTAssertEqual(bus.properties.last, .listeningID(0))
    }

    func testADictationIsNamedByDictationIDAndOnlyADictation() async throws {
        let service = makeService()
        let dictation = try await service.start(options(["silence_seconds": .double(0.5), "dictation": .bool(true)]), caller: ":1.1")
        let mic = try await microphone()
        mic.send(speech: false, count: 3)
        mic.send(speech: true, count: 2)
        mic.send(speech: false, count: 5)
        _ = try await dictation.outcome()
        XCTAssertEqual(bus.properties, [.listeningID(dictation.id), .dictationID(dictation.id), .listening(true), .listening(false),
                                        .listeningID(0), .dictationID(0)])
        XCTAssertThrowsError(try options(["file": .string("/a.wav"), "dictation": .bool(true)]), "a file is no dictation")
        XCTAssertEqual(try options(["dictation": .bool(true)]).dictation, true)
        XCTAssertEqual(try options([:]).dictation, false, "not by default, whatever the hint")
    }

    func testSpeechWithinTheDetectorWarmUpIsDroppedNotCounted() async throws {
        let service = makeService(warmUp: 1)
        let pending = try await service.start(options(["silence_seconds": .double(0.3)]), caller: ":1.1")
        let mic = try await microphone()
        mic.send(speech: true, count: 3)  // the detector's false start
        mic.send(speech: false, count: 8)  // would have ended the recognition after 0.3 s
        mic.send(speech: true, count: 2)
        mic.send(speech: false, count: 3)
        let done = try await pending.outcome()
        XCTAssertEqual(done.end, .endpoint)
        XCTAssertEqual(done.result.text, "w4 w5", "the false start's words are gone")
        XCTAssertEqual(done.duration, 1.6, accuracy: 1e-9)
    }

    func testOneMicrophoneAtATimeAndFilesUpToTheLimit() async throws {
        let service = makeService(files: ["/a.wav": quiet], maxFiles: 1)
        let first = try await service.start(options(), caller: ":1.1")
        let second = await errorKind { _ = try await service.start(self.options(), caller: ":1.2") }
        XCTAssertEqual(second, .busy)
        // Files are admitted meanwhile, up to their own limit.
        let file = try await service.start(options(["file": .string("/a.wav")]), caller: ":1.2")
        _ = try await file.outcome()
        await service.stopRecognition(caller: ":1.1")
        let stopped = try await first.outcome()
        XCTAssertEqual(stopped.end, .stopped)
        // The slot is free again.
        _ = try await service.start(options(), caller: ":1.2")
        await service.cancelRecognition(caller: ":1.2")
    }

    func testStopAnswersWithWhatWasHeardAndCancelFails() async throws {
        let service = makeService()
        let pending = try await service.start(options(), caller: ":1.1")
        let mic = try await microphone()
        mic.send(speech: true, count: 2)
        try await waitFor("two chunks decoded") { self.bus.signals.filter { if case .audioLevel = $0 { true } else { false } }.count >= 1 }
        await service.stopRecognition(caller: ":1.2")  // someone else's: no effect
        XCTAssertFalse(mic.isClosed)
        await service.stopRecognition(caller: ":1.1")
        XCTAssertTrue(mic.isClosed, "the microphone is released when StopRecognition returns")
        let done = try await pending.outcome()
        XCTAssertEqual(done.end, .stopped)

        let next = try await service.start(options(), caller: ":1.1")
        _ = try await microphone(1)
        // Started (and so owed a RecognitionFinished) once the open microphone is attached, a
        // moment after it opens; a cancel before that ends it with neither signal.
        try await waitFor("the second to start") { self.bus.signals.contains(.recognitionStarted(next.id)) }
        await service.cancelRecognition(caller: ":1.1")
        let kind = await errorKind { _ = try await next.outcome() }
        XCTAssertEqual(kind, .cancelled)
        XCTAssertEqual(bus.signals.last, .recognitionFinished(next.id, ""))
    }

    func testEndRecognitionStopsAnotherCallersRecognitionWithWhatWasHeard() async throws {
        let service = makeService()
        let pending = try await service.start(options(), caller: ":1.1")
        let mic = try await microphone()
        mic.send(speech: true, count: 2)
        try await waitFor("a chunk decoded") { self.bus.signals.contains { if case .audioLevel = $0 { true } else { false } } }
        await service.endRecognition(pending.id + 100, cancel: true)  // not running: no error, no effect
        XCTAssertFalse(mic.isClosed)
        await service.endRecognition(pending.id, cancel: false)  // from whoever: a shortcut's second process
        XCTAssertTrue(mic.isClosed, "the microphone is released when EndRecognition returns")
        let done = try await pending.outcome()
        XCTAssertEqual(done.end, .stopped)
        XCTAssertEqual(bus.properties.last, .listeningID(0))
        await service.endRecognition(pending.id, cancel: false)  // already ended: no error
    }

    func testEndRecognitionWithCancelFailsItWithCancelled() async throws {
        let service = makeService()
        let pending = try await service.start(options(), caller: ":1.1")
        _ = try await microphone()
        // Listening is set once the open microphone is attached to the run, a moment after it opens.
        try await waitFor("Listening") { self.bus.properties.contains(.listening(true)) }
        XCTAssertEqual(bus.properties, [.listeningID(pending.id), .listening(true)])
        await service.endRecognition(pending.id, cancel: true)
        let kind = await errorKind { _ = try await pending.outcome() }
        XCTAssertEqual(kind, .cancelled)
        XCTAssertEqual(bus.signals.last, .recognitionFinished(pending.id, ""))
        XCTAssertEqual(bus.properties.last, .listeningID(0))
    }

    func testEndRecognitionBeforeTheMicrophoneOpensEndsItWithoutListening() async throws {
        let service = makeService()
        let pending = try await service.start(options(), caller: ":1.1")
        // Admitted: ListeningID names it at once, before the model has loaded.
        XCTAssertEqual(bus.properties.first, .listeningID(pending.id))
        await service.endRecognition(pending.id, cancel: false)
        let done = try await pending.outcome()
        XCTAssertEqual(done.end, .stopped)
        XCTAssertEqual(bus.properties.last, .listeningID(0))
    }

    func testACallerLeavingCancelsItsRecognitionAndReleasesTheMicrophone() async throws {
        let service = makeService()
        let pending = try await service.start(options(), caller: ":1.7")
        let mic = try await microphone()
        XCTAssertEqual(bus.watchedCallers, [":1.7"])
        bus.vanish(":1.7")
        let kind = await errorKind { _ = try await pending.outcome() }
        XCTAssertEqual(kind, .cancelled)
        XCTAssertTrue(mic.isClosed)
    }

    func testFaultsBecomeTheirErrors() async throws {
        let service = makeService()
        let unsupported = await errorKind { _ = try await service.start(self.options(["language": .string("fr")]), caller: ":1.1") }
        XCTAssertEqual(unsupported, .unsupportedLanguage)
        let german = try await service.start(options(["file": .string("/missing.wav")]), caller: ":1.1")
        let missing = await errorKind { _ = try await german.outcome() }
        XCTAssertEqual(missing, .unreadableFile)
        let grammar = try await service.start(options(["grammar": .string("broken")]), caller: ":1.1")
        let invalid = await errorKind { _ = try await grammar.outcome() }
        XCTAssertEqual(invalid, .invalidArgument)
        capture.failNextOpen(.noMicrophone("no source"))
        let noMic = try await service.start(options(), caller: ":1.1")
        let none = await errorKind { _ = try await noMic.outcome() }
        XCTAssertEqual(none, .noMicrophone)
        // The recording dies mid-way (the server went away).
        let dying = try await service.start(options(), caller: ":1.1")
        try await microphone(0).fail(.serverUnavailable("gone"))
        let died = await errorKind { _ = try await dying.outcome() }
        XCTAssertEqual(died, .noMicrophone)
        XCTAssertTrue(bus.signals.allSatisfy { if case .recognitionStarted = $0 { $0 == .recognitionStarted(dying.id) } else { true } },
                      "only the recognition that got going announced itself")
    }

    func testTheLanguageFallsBackToTheModelOfTheSameLanguage() async throws {
        let service = makeService(files: ["/a.wav": quiet])
        let done = try await service.start(options(["file": .string("/a.wav"), "language": .string("de")]), caller: ":1.1").outcome()
        XCTAssertEqual(done.language, "de-DE")
    }
}

/// The recognition's answer, or a failure if none comes within `timeout` (a give-up bound: no
/// answer at all, not a slow one).
func outcome(of pending: PendingRecognition, within timeout: Duration = .seconds(30)) async throws -> Recognition {
    let answer = Locked<Result<Recognition, VoiceboxError>?>(nil)
    Task {
        do throws(VoiceboxError) {
            let recognition = try await pending.outcome()
            answer.withLock { $0 = .success(recognition) }
        } catch {
            answer.withLock { $0 = .failure(error) }
        }
    }
    try await waitFor("the recognition's answer", timeout: timeout) { answer.withLock { $0 } != nil }
    return try answer.withLock { $0 }!.get()
}

func waitFor(_ what: String, timeout: Duration = .seconds(30), _ condition: () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else {
            XCTFail("timed out waiting for \(what)")
            throw CancellationError()
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// Files beyond the decoders wait their turn, round-robin by caller, and can be stopped or
/// cancelled while they wait.
final class RecognitionServiceQueueTests: XCTestCase {
    private let bus = RecordingBus()
    private let quiet = [Int16](repeating: 0, count: 1_600)

    private func makeService() -> RecognitionService {
        RecognitionService(engine: FakeEngine(warmUp: 0), capture: FakeCapture(), files: FakeFiles(files: ["/a.wav": quiet]),
                           streams: FakeStreams(streams: [:]), bus: bus, maxFileRecognitions: 1)
    }

    private func file(_ path: String) -> RecognizeOptions {
        // (A constant, valid option set.)
        try! RecognizeOptions(["file": .string(path)])
    }

    private var startedIDs: [UInt64] {
        bus.signals.compactMap { if case .recognitionStarted(let id) = $0 { id } else { nil } }
    }

    func testWaitingFilesGetTheDecoderInTurnByCaller() async throws {
        let service = makeService()
        let endless = try await service.start(file("/endless"), caller: ":1.1")
        try await waitFor("the endless file to start") { self.startedIDs == [endless.id] }
        var pending: [PendingRecognition] = []
        for caller in [":1.1", ":1.1", ":1.1", ":1.2", ":1.3"] { pending.append(try await service.start(file("/a.wav"), caller: caller)) }
        await service.endRecognition(endless.id, cancel: false)
        let stopped = try await endless.outcome()
        XCTAssertEqual(stopped.end, .stopped)
        for recognition in pending {
            let done = try await recognition.outcome()
            XCTAssertEqual(done.end, .endOfFile)
        }
        let ids = pending.map(\.id)
        XCTAssertEqual(startedIDs, [endless.id, ids[0], ids[3], ids[4], ids[1], ids[2]])
        let endlessEnded = bus.signals.firstIndex { if case .recognitionFinished(endless.id, _) = $0 { true } else { false } } ?? .max
        let firstOther = bus.signals.firstIndex { if case .recognitionStarted(ids[0]) = $0 { true } else { false } } ?? -1
        XCTAssertLessThan(endlessEnded, firstOther, "nothing starts while the one decoder is taken")
    }

    func testAWaitingFileCanBeStoppedCancelledOrLeftWithoutStarting() async throws {
        let service = makeService()
        let endless = try await service.start(file("/endless"), caller: ":1.1")
        // Its run starts on a task of its own: the files below wait behind it once it has.
        try await waitFor("the endless file to start") { self.startedIDs == [endless.id] }
        let stopped = try await service.start(file("/a.wav"), caller: ":1.2")
        let cancelled = try await service.start(file("/a.wav"), caller: ":1.3")
        let abandoned = try await service.start(file("/a.wav"), caller: ":1.4")
        await service.endRecognition(stopped.id, cancel: false)
        let answer = try await stopped.outcome()
        XCTAssertEqual(answer.end, .stopped)
        XCTAssertEqual(answer.result.text, "")
        await service.cancelRecognition(caller: ":1.3")
        do {
            _ = try await cancelled.outcome()
            XCTFail("a cancelled waiting file answered")
        } catch {
            XCTAssertEqual(error.kind, .cancelled)
        }
        bus.vanish(":1.4")
        do {
            _ = try await abandoned.outcome()
            XCTFail("the file of a caller that left answered")
        } catch {
            XCTAssertEqual(error.kind, .cancelled)
        }
        XCTAssertEqual(startedIDs, [endless.id], "none of them started")
        // The decoder is still the endless file's; the next file waits for it, then runs.
        let next = try await service.start(file("/a.wav"), caller: ":1.2")
        await service.cancelRecognition(caller: ":1.1")
        let done = try await next.outcome()
        XCTAssertEqual(done.end, .endOfFile)
        XCTAssertEqual(bus.watchedCallers, [], "no watch left")
    }

    func testPastTheQueueLengthFilesAreBusy() async throws {
        let service = makeService()
        _ = try await service.start(file("/endless"), caller: ":0.1")
        for _ in 0..<RecognitionService.fileQueuePerCaller { _ = try await service.start(file("/a.wav"), caller: ":1.0") }
        do throws(VoiceboxError) {
            _ = try await service.start(file("/a.wav"), caller: ":1.0")
            XCTFail("a caller queued more than its share")
        } catch {
            XCTAssertEqual(error.kind, .busy)
            XCTAssertTrue(error.message.contains("per caller"), error.message)
        }
        for index in RecognitionService.fileQueuePerCaller..<RecognitionService.fileQueueLimit {
            _ = try await service.start(file("/a.wav"), caller: ":2.\(index)")
        }
        do throws(VoiceboxError) {
            _ = try await service.start(file("/a.wav"), caller: ":3.1")
            XCTFail("the queue took more than its length")
        } catch {
            XCTAssertEqual(error.kind, .busy)
        }
        for index in 0..<RecognitionService.fileQueueLimit { await service.cancelRecognition(caller: ":2.\(index)") }
        await service.cancelRecognition(caller: ":1.0")
        await service.cancelRecognition(caller: ":0.1")
    }
}
