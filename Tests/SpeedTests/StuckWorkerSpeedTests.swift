import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import XCTest

/// The contract, in wall time: decoder workers that do not answer hold up no other call. Speak is
/// answered at once, not after the stuck workers' bound (`worker-answer`, 10 s): asserted under
/// 10 / 3 s (measured under 0.1 s: over 30 times the slack). Another recognition waits at most for
/// that bound, as the stuck ones hold the decoding turns (one per core) until it is over: asserted
/// under 3 × 10 s. (Found by a red-team pass: their blocking waits ran on Swift's cooperative
/// pool, and two of them stalled the whole service for 10 s.)
final class StuckWorkerSpeedTests: XCTestCase {
    func testStoppedDecoderWorkersHoldUpNoOneElse() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await startService(on: stack)
        let pid = service.daemon.pid
        let goforward = Recordings.path("goforward.raw")
        _ = try await service.recognize(["file": .string(goforward)])
        _ = try await service.recognize(["file": .string(goforward), "hint": .string("confirmation")])
        try await waitUntil("four warm workers", timeout: .seconds(10)) { ServiceProcesses.decoderWorkers(of: pid).count >= 4 }
        let dictation = ServiceProcesses.decoderWorkers(of: pid).filter { worker in
            let cmdline = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(worker)/cmdline"))) ?? Data()
            return String(decoding: cmdline, as: UTF8.self).contains("--language-model")
        }
        XCTAssertEqual(dictation.count, 2)
        for worker in dictation { kill(worker, SIGSTOP) }
        addTeardownBlock { for worker in dictation { kill(worker, SIGCONT) } }
        let known = service.startedRecognitions
        let stuck = (0..<2).map { _ in Task { await service.recognitionError(["file": .string(goforward)]) } }
        _ = try await service.waitForNewRecognition(besides: known)
        let asked = ContinuousClock.now
        let spoken = try await service.speak("still speaking")
        let speakAnswered = ContinuousClock.now - asked
        let yes = try await service.recognize(["file": .string(goforward), "hint": .string("confirmation")])
        let otherAnswered = ContinuousClock.now - asked
        print("METRIC two stopped decoder workers: Speak answered in \(speakAnswered), another kind's Recognize in \(otherAnswered)")
        XCTAssertLessThan(seconds(speakAnswered), 3 * 1.0)  // docs/speech.md: within 1 s
        XCTAssertLessThan(seconds(otherAnswered), 3 * 10.0)
        XCTAssertNotNil(yes.text)
        let end = try await service.waitForFinish(spoken)
        XCTAssertEqual(end, "done")
        for task in stuck {
            let error = await task.value
            // Stopped for silence (EngineUnavailable), or a fresh worker decoded it: either way bounded.
            if let error { XCTAssertEqual(error.name, "org.voicebox.Error.EngineUnavailable", error.message) }
        }
    }
}
