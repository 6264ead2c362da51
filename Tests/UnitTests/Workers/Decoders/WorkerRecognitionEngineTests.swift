import Foundation
import Glibc
@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import VoiceboxModels
import VoiceboxPocketsphinx
import VoiceboxSndfile
import VoiceboxSpawn
import XCTest
@testable import VoiceboxWorkers

/// Decoding in `voicebox-worker decoder` processes against the same model decoded in the test
/// process: the same words, times and confidences in every search; the same refusals; a worker that dies or
/// stops answering fails its recognition alone, naming how; warm workers are kept and stopped.
final class WorkerRecognitionEngineTests: XCTestCase {
    private var workerPath: String {
        return Checkout.buildDirectory + "/voicebox-worker"
    }

    private func requireModel() throws {
        try XCTSkipUnless(ModelCatalog.debianEnglish != nil, "pocketsphinx-en-us is not installed")
        try XCTSkipUnless(FileManager.default.fileExists(atPath: Recordings.path("goforward.raw")), "pocketsphinx-testdata")
    }

    private func engine(idle: Duration = .seconds(600), bounds: Bounds = Bounds()) -> WorkerRecognitionEngine {
        WorkerRecognitionEngine(workerPath: workerPath, idleUnloadAfter: idle, bounds: bounds)
    }

    private func decode(_ path: String, with engine: any RecognitionEngine,
                        _ configuration: RecognitionConfiguration = .init()) async throws -> RecognitionResult {
        let decoder = try await engine.makeDecoder(configuration)
        return try await FileReading.read(try AudioFileReader(path: path), through: decoder).result
    }

    /// This test process's children running the worker in decoder mode.
    private static func decoderWorkers() -> [pid_t] {
        let me = getpid()
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard let cmdline = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")),
                  let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let afterName = stat.range(of: ") ") else { return false }
            let arguments = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            let fields = stat[afterName.upperBound...].split(separator: " ")
            return arguments.count > 1 && arguments[1] == "decoder" && fields.count > 1 && pid_t(fields[1]) == me
                && !stat[afterName.upperBound...].hasPrefix("Z")
        }
    }

    func testTheSameWordsTimesAndConfidencesAsTheEngineInThisProcess() async throws {
        try requireModel()
        let workers = engine()
        let local = InProcessEngine()
        let grammar = try String(contentsOfFile: Recordings.path("cards/cards.gram"), encoding: .utf8)
        let cases: [(String, RecognitionConfiguration)] = [
            (Recordings.path("goforward.raw"), .init()),
            (Recordings.path("numbers.raw"), .init()),
            (Recordings.path("librivox/sense_and_sensibility_01_austen_64kb-0870.wav"), .init()),
            (Recordings.path("cards/003.wav"), .init(grammar: grammar)),
            (Recordings.path("goforward.raw"), .init(keyphrases: ["forward", "ten meters"], keyphraseThreshold: 1e-10)),
            (Recordings.path("goforward.raw"), .init(hint: .confirmation)),
        ]
        for (path, configuration) in cases {
            let expected = try await decode(path, with: local, configuration)
            let got = try await decode(path, with: workers, configuration)
            XCTAssertEqual(got, expected, "\(path) \(configuration)")
            XCTAssertFalse(got.text.isEmpty, "\(path) \(configuration)")
        }
        let said = try await decode(Recordings.path("goforward.raw"), with: workers)
        XCTAssertEqual(said.text, "go forward ten meters")
    }

    func testRefusalsAreTheEnginesOwn() async throws {
        try requireModel()
        let workers = engine()
        do {
            _ = try await workers.makeDecoder(.init(grammar: "#JSGF V1.0; grammar g; public <a> = unknownword;"))
            XCTFail("a grammar with a word the dictionary lacks")
        } catch RecognitionError.invalidGrammar(let why) {
            XCTAssert(why.contains("unknownword"), why)
        }
        do {
            _ = try await workers.makeDecoder(.init(keyphrases: ["qqqzzz"]))
            XCTFail("a keyphrase with a word the dictionary lacks")
        } catch RecognitionError.invalidArgument(let why) {
            XCTAssert(why.contains("qqqzzz"), why)
        }
        do {
            _ = try await workers.makeDecoder(.init(language: "xx-YY"))
            XCTFail("a language without a model")
        } catch RecognitionError.unsupportedLanguage(let language) {
            XCTAssertEqual(language, "xx-YY")
        }
        // The worker that refused is still good for the next recognition.
        let said = try await decode(Recordings.path("goforward.raw"), with: workers)
        XCTAssertEqual(said.text, "go forward ten meters")
    }

    /// SIGSEGV, abort, SIGKILL (the OOM killer) and SIGSYS (the seccomp filter) mid-recognition:
    /// the next call fails naming the signal, and the next recognition starts at once.
    func testAWorkerThatDiesFailsItsRecognitionNamingTheSignal() async throws {
        try requireModel()
        let workers = engine()
        _ = try await decode(Recordings.path("goforward.raw"), with: workers)  // one warm, one more starting
        let audio = try AudioFileReader(path: Recordings.path("numbers.raw")).read(maxSamples: 16_000)
        for signal in [SIGSEGV, SIGABRT, SIGKILL, SIGSYS] {
            let decoder = try await workers.makeDecoder(.init())
            _ = try await decoder.process(audio)
            // The busy one among them: kill them all, the idle ones too (the next call starts afresh).
            let killed = Self.decoderWorkers()
            XCTAssertFalse(killed.isEmpty)
            for pid in killed { kill(pid, signal) }
            do {
                _ = try await decoder.process(audio)
                _ = try await decoder.finish()
                XCTFail("\(signal): the recognition went on without its worker")
            } catch RecognitionError.engineFailure(let why) {
                XCTAssert(why.contains(Termination.name(of: signal)), "\(signal): \(why)")
            }
            // The idle ones killed too take a moment to die: a worker that is taken before that
            // and fails is tried again only once (it may be the configuration that killed it).
            // Gone means reaped (its /proc entry removed), not only its command line emptied,
            // which happens while it is still exiting and the pool cannot see its end yet.
            try await waitUntil("the killed workers reaped") { !killed.contains { access("/proc/\($0)", F_OK) == 0 } }
            let said = try await decode(Recordings.path("goforward.raw"), with: workers)
            XCTAssertEqual(said.text, "go forward ten meters")
        }
    }

    /// A worker that stops answering (SIGSTOP, as one looping on hostile input) is killed once its
    /// bound (`worker-answer`, made small here) is over, and its recognition fails saying so.
    func testAWorkerThatStopsAnsweringIsStoppedWithinItsBound() async throws {
        try requireModel()
        let workers = engine(bounds: Bounds([.workerAnswer: .milliseconds(300)]))
        let decoder = try await workers.makeDecoder(.init(hint: .confirmation))
        let audio = try AudioFileReader(path: Recordings.path("goforward.raw")).read(maxSamples: 1600)
        _ = try await decoder.process(audio)
        let stopped = Self.decoderWorkers()
        for pid in stopped { kill(pid, SIGSTOP) }
        // Should the bound never fire, the workers are killed after 30 s: the call then fails naming
        // SIGKILL instead, and the test with it.
        let giveUp = DispatchWorkItem { for pid in stopped { kill(pid, SIGKILL) } }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: giveUp)
        defer { giveUp.cancel() }
        let asked = ContinuousClock.now
        do {
            _ = try await decoder.process(audio)
            XCTFail("a stopped worker answered")
        } catch {
            // 0.3 s and 10 times the 0.1 s of audio.
            XCTAssert("\(error)".contains("sent nothing for 1.3 s and was stopped"), "\(error)")
        }
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - asked, .milliseconds(1300), "not before its bound")
        // The one that had the recognition (a warm one, stopped too, stays idle).
        try await waitUntil("the stopped worker killed", timeout: .seconds(10)) {
            stopped.contains { !Self.decoderWorkers().contains($0) }
        }
        for pid in Self.decoderWorkers() { kill(pid, SIGCONT) }
    }

    /// After a recognition warm workers wait (two: the one given back and one started meanwhile);
    /// the next recognition takes one of them, starting no process; after the idle time (0.5 s
    /// here) none is left running.
    func testWarmWorkersAreKeptThenStopped() async throws {
        try requireModel()
        // An idle bound longer than a worker's start under ThreadSanitizer on loaded cores (with
        // 0.5 s, the first was stopped before the second was warm).
        let workers = engine(idle: .seconds(5))
        _ = try await workers.makeDecoder(.init(hint: .confirmation))
        try await waitUntil("two warm workers", timeout: .seconds(30)) { await workers.warmWorkerCount == 2 }
        let warm = Set(Self.decoderWorkers())
        XCTAssertEqual(warm.count, 2)
        do {
            let decoder = try await workers.makeDecoder(.init(hint: .confirmation))
            XCTAssertEqual(Set(Self.decoderWorkers()), warm, "a worker started for a recognition that had a warm one")
            let warmLeft = await workers.warmWorkerCount
            XCTAssertEqual(warmLeft, 1, "it took a warm one")
            let partial = await decoder.partial()
            XCTAssertNil(partial, "it answers")
        }
        try await waitUntil("the idle workers to be stopped", timeout: .seconds(30)) {
            await workers.warmWorkerCount == 0 && Self.decoderWorkers().isEmpty
        }
    }

    /// A decoder's interrupt, which a recognition keeps to its end, does not keep its worker: a
    /// stream that gives decoders back and takes fresh ones (turns with other streams) leaves no
    /// more workers running than the pool keeps warm (two), however many it used.
    func testADecodersInterruptDoesNotKeepItsWorkerRunning() async throws {
        try requireModel()
        let workers = engine()
        var interrupts: [@Sendable () -> Void] = []
        for _ in 0..<5 {
            // Three at once, so that giving them back finds two warm already: one too many.
            let held = [try await workers.makeDecoder(.init(hint: .confirmation)),
                        try await workers.makeDecoder(.init(hint: .confirmation)),
                        try await workers.makeDecoder(.init(hint: .confirmation))]
            interrupts += held.compactMap(\.interrupt)
        }
        XCTAssertEqual(interrupts.count, 15)
        try await waitUntil("only the warm workers left", timeout: .seconds(30)) { Self.decoderWorkers().count <= 2 }
        _ = interrupts
    }

    /// The idle time counts per model kind: while one kind is in steady use, another's idle workers
    /// are stopped after the idle time all the same (it counted from the pool's last use once).
    func testIdleWorkersOfAnUnusedKindStopWhileAnotherIsInUse() async throws {
        try requireModel()
        // 2 s: the kind in use is idle only for a 0.1 s sleep between calls, so only a sleep late by
        // 1.9 s (or a decode left idle that long) could let its warm workers go.
        let workers = engine(idle: .seconds(2))
        func dictationWorkers() -> [pid_t] {
            Self.decoderWorkers().filter { pid in
                let cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
                return String(decoding: cmdline, as: UTF8.self).contains("--language-model")
            }
        }
        // Taken before the decode whose end starts the idle time, so that a late scheduler can only
        // make "not before the idle time" below easier to meet.
        let beforeIdle = ContinuousClock.now
        _ = try await decode(Recordings.path("goforward.raw"), with: workers)  // dictation
        try await waitUntil("warm dictation workers", timeout: .seconds(10)) { !dictationWorkers().isEmpty }
        let start = ContinuousClock.now
        var calls = 0
        // The other kind in use, a call every 0.1 s, until the unused kind's workers are gone (or
        // 30 s have passed: they stay for good).
        while ContinuousClock.now - start < .seconds(30), !dictationWorkers().isEmpty {
            _ = try await decode(Recordings.path("goforward.raw"), with: workers, .init(hint: .confirmation))
            calls += 1
            try await Task.sleep(for: .milliseconds(100))
        }
        XCTAssert(dictationWorkers().isEmpty, "the unused kind's workers stay while another kind is used")
        // Used every 0.1 s, less than the idle time: a timer the other kind's use set back would
        // never have fired (the loop would run its 30 s).
        XCTAssertGreaterThanOrEqual(calls, 1, "the other kind was in use meanwhile")
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - beforeIdle, .seconds(2), "not before the idle time")
        let warm = await workers.warmWorkerCount
        XCTAssertGreaterThan(warm, 0, "the kind in use keeps its warm workers")
    }

    /// Warm workers killed while idle (the OOM killer, a person) are replaced in the background:
    /// the next recognition starts warm. (A red-team pass found the pool left empty then: the next
    /// call waited 0.47 s for a model load.)
    func testWarmWorkersThatDieIdleAreReplaced() async throws {
        try requireModel()
        let workers = engine()
        _ = try await decode(Recordings.path("goforward.raw"), with: workers, .init(hint: .confirmation))
        try await waitUntil("two warm workers", timeout: .seconds(30)) { await workers.warmWorkerCount == 2 }
        let killed = Self.decoderWorkers()
        for pid in killed { kill(pid, SIGKILL) }
        try await waitUntil("a fresh warm worker", timeout: .seconds(30)) {
            let now = Self.decoderWorkers()
            return !now.isEmpty && Set(now).isDisjoint(with: killed)
        }
        try await waitUntil("the fresh one idle", timeout: .seconds(30)) { await workers.warmWorkerCount >= 1 }
        let decoder = try await workers.makeDecoder(.init(hint: .confirmation))
        let partial = await decoder.partial()
        XCTAssertNil(partial, "the replacement answers")
    }

    /// Warm workers stopped (SIGSTOP) while idle are not handed out: the next recognitions get
    /// a worker that answers (a model load, not the 10 s bound and a failure), and the stopped
    /// ones are killed.
    func testWarmWorkersStoppedWhileIdleAreNotHandedOut() async throws {
        try requireModel()
        let workers = engine()
        _ = try await decode(Recordings.path("goforward.raw"), with: workers)
        try await waitUntil("two warm workers", timeout: .seconds(30)) { await workers.warmWorkerCount == 2 }
        let stopped = Self.decoderWorkers()
        XCTAssertEqual(stopped.count, 2)
        for pid in stopped { kill(pid, SIGSTOP) }
        addTeardownBlock { for pid in stopped { kill(pid, SIGKILL) } }
        // A stop takes effect when the worker is next scheduled, not when kill returns: on busy
        // cores (the thread sanitizer's) a worker asked for at once could still be running.
        try await waitUntil("the workers stopped", timeout: .seconds(10)) { stopped.allSatisfy(ForeignProcess.isStopped) }
        // A stopped one handed out would not answer its configure: the call would fail (its
        // bound, 10 s) with EngineUnavailable, not hear the words.
        for _ in 0..<2 {
            let heard = try await decode(Recordings.path("goforward.raw"), with: workers)
            XCTAssertEqual(heard.text, "go forward ten meters")
        }
        try await waitUntil("the stopped workers gone", timeout: .seconds(10)) {
            Set(Self.decoderWorkers()).isDisjoint(with: stopped)
        }
    }

    func testTheDecoderConfinementAllowsReadingOnly() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-decoder-\(getpid())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let target = scratch.appendingPathComponent("target").path
        try Data("kept\n".utf8).write(to: URL(fileURLWithPath: target))
        func probe(_ arguments: [String]) throws -> (Termination, String) { try probeConfinement(workerPath, arguments) }
        for what in ["socket", "exec", "io_uring", "ptrace"] {
            let (ended, said) = try probe(["decoder:" + what])
            XCTAssertEqual(ended, .signalled(SIGSYS), "\(what): \(said)")
        }
        for (arguments, says) in [(["decoder:write", target], "write: refused (Permission denied)"),
                                  (["decoder:read", target], "read: allowed"),
                                  (["decoder:truncate", target], "truncate: refused (Operation not permitted)"),
                                  (["decoder:unlink", target], "unlink: refused (Operation not permitted)"),
                                  (["decoder:fork"], "fork: refused (Operation not permitted)"),
                                  (["decoder:kill"], "kill: refused (Operation not permitted)")] {
            let (ended, said) = try probe(arguments)
            XCTAssertEqual(ended, .exited(0), "\(arguments)")
            XCTAssertEqual(said, says)
        }
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "kept\n")
    }
}
