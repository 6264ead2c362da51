import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxSpawn
import XCTest

/// voiceboxd never decodes: pocketsphinx runs in `voicebox-worker decoder` processes (see
/// WorkerProtocol). A decoder worker that dies mid-microphone or mid-file fails that recognition
/// alone, with EngineUnavailable naming the signal; the next call is answered at once; no worker,
/// busy or warm, outlives the service.
final class DecoderWorkerTests: XCTestCase {

    /// The same mid-file: EngineUnavailable naming the signal; the next file at once.
    func testADecoderWorkerThatDiesMidFileFailsOnlyThatFile() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await startService(on: stack)
        let pid = service.daemon.pid
        let wav = Recordings.path("librivox/sense_and_sensibility_01_austen_64kb-0870.wav")
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])  // warm workers
        let known = service.startedRecognitions
        let failing = Task { await service.recognitionError(["file": .string(wav)]) }
        let id = try await service.waitForNewRecognition(besides: known)
        try await waitUntil("decoding under way", timeout: .seconds(30)) {
            service.recognitionSignals(of: id).contains { $0.member == "RecognitionProgress" }
        }
        for worker in ServiceProcesses.decoderWorkers(of: pid) { kill(worker, SIGSEGV) }
        let error = await failing.value
        XCTAssertEqual(error?.name, "org.voicebox.Error.EngineUnavailable", error?.message ?? "no error")
        XCTAssert(error?.message.contains("SIGSEGV") == true, error?.message ?? "")
        let next = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(next.text, "go forward ten meters")
    }

    /// voiceboxd killed with SIGKILL while its warm decoder workers are stopped (as ones stuck in
    /// a loop would be): they go with it (PR_SET_PDEATHSIG).
    func testNoDecoderWorkerOutlivesTheService() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await startService(on: stack)
        let pid = service.daemon.pid
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        var workers: [pid_t] = []
        try await waitUntil("warm, confined decoder workers", timeout: .seconds(10)) {
            workers = ServiceProcesses.decoderWorkers(of: pid)
            return !workers.isEmpty && workers.allSatisfy { worker in
                ((try? String(contentsOfFile: "/proc/\(worker)/status", encoding: .utf8)) ?? "").contains("Seccomp:\t2")
            }
        }
        for worker in workers { XCTAssertEqual(kill(worker, SIGSTOP), 0) }
        service.daemon.signal(SIGKILL)
        try await waitUntil("the workers to go with voiceboxd", timeout: .seconds(10)) {
            workers.allSatisfy { !ServiceProcesses.running($0) }
        }
    }

    /// A grammar of 1.3 KB whose rules double each other 22 times: its network would take gigabytes.
    /// The worker building it stops at its data limit or its answer bound (`worker-answer`, 3 s
    /// here); the call fails then, and the service goes on. (A worker that fails so is not tried
    /// again: only one killed by a signal it did not ask for is, WorkerRecognitionEngine.makeDecoder.)
    func testAGrammarThatExplodesEndsItsWorkerOnly() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await startService(on: stack, extraArguments: ["--bound", "worker-answer=3"])
        var grammar = "#JSGF V1.0; grammar g; <a0> = go | forward;"
        for level in 1...22 { grammar += " <a\(level)> = <a\(level - 1)> <a\(level - 1)>;" }
        grammar += " public <s> = <a22>;"
        let error = await service.recognitionError(["file": .string(Recordings.path("goforward.raw")), "grammar": .string(grammar)])
        print("METRIC an exploding grammar fails: \(error?.name ?? "no error"): \(error?.message ?? "")")
        XCTAssertEqual(error?.name, "org.voicebox.Error.EngineUnavailable", error?.message ?? "no error")
        XCTAssertNil(service.daemon.poll())
        let next = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(next.text, "go forward ten meters")
    }
}
