import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxSpawn
import XCTest

/// A caller's file is decoded by a confined `voicebox-worker` (see WorkerProtocol), never by
/// voiceboxd: a worker that dies mid-file fails that recognition alone, with UnreadableFile naming
/// the signal; the service answers the next call at once; no worker outlives its file or the service.
/// These tests share one voiceboxd (they leave nothing behind); the one that kills it is
/// `FileWorkerServiceDeathTests`.
final class FileWorkerTests: ServiceTestCase {
    override class var sharesService: Bool { true }
    override class var usesRecordings: Bool { true }

    private func longFile() throws -> String { try Self.longFile(in: directory) }

    /// About 49 s of real speech (librivox twice): long enough that its worker is still reading
    /// while the service decodes, short of the length that is read whole for parts.
    static func longFile(in directory: URL) throws -> String {
        let librivox = try FileManager.default.contentsOfDirectory(atPath: Recordings.path("librivox"))
            .filter { $0.hasSuffix(".wav") }.sorted().map { Recordings.path("librivox/" + $0) }
        let target = directory.appendingPathComponent("long.wav").path
        let result = try runProgram(["sox"] + librivox + librivox + [target])
        guard result.status == 0 else { throw ProgramError(description: "sox failed: \(result.output)") }
        return target
    }

    /// SIGSEGV (a crash in libsndfile), SIGABRT (an assertion) and SIGKILL (the OOM killer) mid-file:
    /// that Recognize fails with UnreadableFile naming the signal; the same voiceboxd recognizes the
    /// next file at once and still speaks.
    func testAWorkerThatDiesMidFileFailsOnlyThatFileNamingTheSignal() async throws {
        let service = self.service!
        let long = try longFile()
        let pid = service.daemon.pid
        for signal in [SIGSEGV, SIGABRT, SIGKILL] {
            let name = Termination.name(of: signal)
            let known = service.startedRecognitions
            let failing = Task { await service.recognitionError(["file": .string(long)]) }
            let id = try await service.waitForNewRecognition(besides: known)
            var worker: pid_t = 0
            try await waitUntil("a worker reading the file", timeout: .seconds(10)) {
                worker = ServiceProcesses.workers(of: pid).first ?? 0
                return worker != 0
            }
            try await waitUntil("decoding under way", timeout: .seconds(30)) {
                service.recognitionSignals(of: id).contains { $0.member == "RecognitionProgress" }
            }
            XCTAssertEqual(kill(worker, signal), 0)
            let error = await failing.value
            XCTAssertEqual(error?.name, "org.voicebox.Error.UnreadableFile", "\(name): \(error?.message ?? "no error")")
            XCTAssert(error?.message.contains(name) == true, "the error names \(name): \(error?.message ?? "")")
            XCTAssertNil(service.daemon.poll(), "voiceboxd must not die with its worker")

            let next = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
            XCTAssertEqual(next.text, "go forward ten meters")
        }
        let spoken = try await service.speak("still speaking")
        let end = try await service.waitForFinish(spoken)
        XCTAssertEqual(end, "done")
        XCTAssertEqual(ServiceProcesses.workers(of: pid), [], "a worker outlived its file")
    }

    /// A file read to its end, and one whose recognition is cancelled halfway, leave no worker.
    func testNoWorkerOutlivesItsFile() async throws {
        let service = self.service!
        let pid = service.daemon.pid
        let done = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(done.text, "go forward ten meters")
        XCTAssertEqual(ServiceProcesses.workers(of: pid), [])

        let long = try longFile()
        let known = service.startedRecognitions
        let cancelled = Task { await service.recognitionError(["file": .string(long)]) }
        _ = try await service.waitForNewRecognition(besides: known)
        try await waitUntil("a worker reading the file") { !ServiceProcesses.workers(of: pid).isEmpty }
        _ = try await service.call("CancelRecognition")
        let error = await cancelled.value
        XCTAssertEqual(error?.name, "org.voicebox.Error.Cancelled", error?.message ?? "no error")
        try await waitUntil("the worker to go", timeout: .seconds(10)) { ServiceProcesses.workers(of: pid).isEmpty }
    }
}

final class FileWorkerServiceDeathTests: XCTestCase {
    /// voiceboxd killed (SIGKILL: no clean-up of its own) mid-file: its worker goes with it
    /// (PR_SET_PDEATHSIG). The worker is stopped first, as one stuck in a loop on a hostile file
    /// would be: a worker that writes would also end on its closed pipe, and prove nothing.
    func testNoWorkerOutlivesTheService() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await startService(on: stack)
        let pid = service.daemon.pid
        let long = try FileWorkerTests.longFile(in: try makeTemporaryDirectory(self))
        let failing = Task { await service.recognitionError(["file": .string(long)]) }
        var worker: pid_t = 0
        // Confined (seccomp is the last step, PR_SET_PDEATHSIG the first): a worker caught before
        // that could not know its parent died.
        try await waitUntil("a confined worker reading the file", timeout: .seconds(10)) {
            worker = ServiceProcesses.workers(of: pid).first ?? 0
            let status = (try? String(contentsOfFile: "/proc/\(worker)/status", encoding: .utf8)) ?? ""
            return worker != 0 && status.contains("Seccomp:\t2")
        }
        XCTAssertEqual(kill(worker, SIGSTOP), 0)
        service.daemon.signal(SIGKILL)
        try await waitUntil("the worker to go with voiceboxd", timeout: .seconds(10)) { !ServiceProcesses.running(worker) }
        _ = await failing.value
    }
}
