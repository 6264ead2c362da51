import Foundation
@testable import TestSupport
import Glibc
import VoiceboxSpawn
import XCTest

/// A microphone recognition whose model is not loaded (the first, or the first after
/// `model-idle`): the microphone opens while the model loads, and what is said meanwhile is heard.
final class ColdModelMicrophoneTests: ServiceTestCase {
    override class var usesRecordings: Bool { true }

    /// The decoder worker is held (SIGSTOP) from its start until the speech has been played: it
    /// cannot load its model nor answer anything meanwhile. RecognitionStarted and Listening come
    /// while it is held, and the words played before it could decode anything are all heard.
    // What the sound server decides here: the microphone
    func testSpeechSaidWhileTheModelLoadsIsHeard() async throws {
        let (service, stack, directory) = (self.service!, self.stack!, self.directory!)
        let wav = try Recordings.wav("goforward.raw", in: directory)
        let daemon = service.daemon.pid
        XCTAssertTrue(ServiceProcesses.decoderWorkers(of: daemon).isEmpty, "a fresh service has no model loaded")
        let holding = holdFirstDecoderWorker(of: daemon)
        async let answer = service.recognize([:])
        let worker = try await held(holding)
        let id = try await service.waitForNewRecognition(besides: [])
        try await service.waitForListening(true)
        XCTAssertTrue(ForeignProcess.isStopped(worker),
                      "RecognitionStarted and Listening came while the model could not load: \(Self.describe(worker, of: daemon))")
        // Past the detector's warm-up (apps are told to speak 1.5 s after RecognitionStarted;
        // goforward.raw begins with 0.4 s of silence), then the speech, all while the worker is held.
        try await Task.sleep(for: .seconds(1.2))
        let player = try stopsAtEnd(Player(wav, sink: stack.micSink))
        await player.waitUntilDone()
        XCTAssertTrue(ForeignProcess.isStopped(worker))
        kill(worker, SIGCONT)
        let recognized = try await answer
        XCTAssertEqual(recognized.id, id)
        XCTAssertEqual(recognized.text, "go forward ten meters", "the words said while the model was loading")
        XCTAssertEqual(recognized.reason, "endpoint")
        try await service.waitForListening(false)
    }

    /// `voicebox listen` on a terminal says "listening" from RecognitionStarted on, not only from
    /// the first level, which comes once the model has loaded.
    func testListenSaysListeningWhileTheModelLoads() async throws {
        let (service, stack) = (self.service!, self.stack!)
        let holding = holdFirstDecoderWorker(of: service.daemon.pid)
        let client = try stopsAtEnd(ClientRun(stack, ["listen", "--max-seconds", "1"], terminal: true))
        let worker = try await held(holding)
        try await waitUntil("the meter on the terminal") { client.stdout.contains("listening [") }
        XCTAssertTrue(ForeignProcess.isStopped(worker), "shown while the model could not load: \(Self.describe(worker, of: service.daemon.pid))")
        kill(worker, SIGCONT)
        let status = await client.finish()
        XCTAssertEqual(status, 2, "silence for max_seconds: heard nothing (\(client.stderr))")
    }

    /// A dictation stopped while its model loads frees the microphone at once: the next press
    /// starts a new dictation (it did nothing, exit 0, while the model loaded), and the stopped one
    /// still prints what was said before its stop.
    func testTheNextDictationStartsWhileAStoppedOneStillLoads() async throws {
        let (service, stack, directory) = (self.service!, self.stack!, self.directory!)
        let wav = try Recordings.wav("goforward.raw", in: directory)
        let holding = holdFirstDecoderWorker(of: service.daemon.pid)
        let first = try stopsAtEnd(ClientRun(stack, ["dictate", "--start", "--output", "stdout", "--no-cue"]))
        let worker = try await held(holding)
        let firstID = try await service.waitForNewRecognition(besides: [])
        try await service.waitForListening(true)
        try await Task.sleep(for: .seconds(1.2))  // past the detector's warm-up
        let player = try stopsAtEnd(Player(wav, sink: stack.micSink))
        await player.waitUntilDone()
        let (stopStatus, stop) = try await voicebox(stack, ["dictate", "--stop"])
        XCTAssertEqual(stopStatus, 0, stop.stderr)
        try await waitUntil("the dictation slot free, the model still loading") {
            (try? await service.property("DictationID"))?.uint64 == 0
        }
        XCTAssertTrue(ForeignProcess.isStopped(worker))
        let second = try stopsAtEnd(ClientRun(stack, ["dictate", "--start", "--output", "stdout", "--no-cue"]))
        let secondID = try await service.waitForNewRecognition(besides: [firstID])
        XCTAssertNotEqual(secondID, firstID, "the next press started a dictation of its own")
        let (cancelStatus, cancel) = try await voicebox(stack, ["dictate", "--cancel"])
        XCTAssertEqual(cancelStatus, 0, cancel.stderr)
        kill(worker, SIGCONT)
        let firstStatus = await first.finish()
        XCTAssertEqual(firstStatus, 0, first.stderr)
        XCTAssertEqual(first.stdout.trimmingCharacters(in: .whitespacesAndNewlines).lowercased(), "go forward ten meters",
                       "the stopped dictation's words, decoded once the model loaded")
        _ = await second.finish()
    }

    /// The worker's state line and the daemon's decoder workers, for a failure's message.
    static func describe(_ worker: pid_t, of daemon: pid_t) -> String {
        let stat = (try? String(contentsOfFile: "/proc/\(worker)/stat", encoding: .utf8)) ?? "gone"
        return "worker \(worker): \(stat.prefix(60)); decoder workers now \(ServiceProcesses.decoderWorkers(of: daemon))"
    }

    /// Holds (SIGSTOP) the first decoder worker of `daemon` as soon as it appears, before its model
    /// has loaded (that takes a tenth of a second and more); its pid, nil if none came in 20 s.
    private func holdFirstDecoderWorker(of daemon: pid_t) -> Task<pid_t?, Never> {
        Task.detached {
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline {
                if let worker = ServiceProcesses.decoderWorkers(of: daemon).first {
                    kill(worker, SIGSTOP)
                    // /proc says T only once the worker has run again and taken the signal: a
                    // loaded machine may leave it pending (state R, no code of its own run) a while.
                    while !ForeignProcess.isStopped(worker), ContinuousClock.now < deadline { usleep(1_000) }
                    return worker
                }
                usleep(1_000)
            }
            return nil
        }
    }

    private func held(_ holding: Task<pid_t?, Never>) async throws -> pid_t {
        let found = await holding.value
        let worker = try XCTUnwrap(found, "no decoder worker started")
        addTeardownBlock { kill(worker, SIGCONT) }
        return worker
    }
}
