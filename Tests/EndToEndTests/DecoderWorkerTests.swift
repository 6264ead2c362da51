import Foundation
import Glibc
import TestSupport
import VoiceboxBus
import VoiceboxSpawn
import XCTest

/// voiceboxd never decodes: pocketsphinx runs in `voicebox-worker decoder` processes (see
/// WorkerProtocol). A decoder worker that dies mid-microphone or mid-file fails that recognition
/// alone, with EngineUnavailable naming the signal; the next call is answered at once; no worker,
/// busy or warm, outlives the service.
final class DecoderWorkerTests: XCTestCase {
    var cleanUps: [() async -> Void] = []

    override func tearDown() async throws {
        for cleanUp in cleanUps.reversed() { await cleanUp() }
        cleanUps = []
    }

    private func service(_ stack: Stack) async throws -> ServiceHarness {
        let service = try await ServiceHarness(stack: stack)
        cleanUps.append { await service.stop() }
        return service
    }

    /// voiceboxd's children running the worker in decoder mode (busy or warm).
    static func decoderWorkers(of daemon: pid_t) -> [pid_t] {
        FileWorkerTests.workers(of: daemon, mode: "decoder")
    }

    static func mappedLibraries(of pid: pid_t) -> Set<String> {
        // Read to the end: /proc says its files are empty, and a read sized by that stops early.
        let data = FileHandle(forReadingAtPath: "/proc/\(pid)/maps")?.readDataToEndOfFile() ?? Data()
        let maps = String(decoding: data, as: UTF8.self)
        return Set(maps.split(separator: "\n").compactMap { line in
            line.split(separator: " ", omittingEmptySubsequences: true).last.map(String.init)
        }.filter { $0.hasPrefix("/") }.map { ($0 as NSString).lastPathComponent })
    }

    /// After a file and a microphone recognition, voiceboxd has mapped no part of pocketsphinx,
    /// while its decoder workers have: the decoding happened there.
    func testTheServiceNeverMapsTheEngine() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await service(stack)
        let directory = try makeTemporaryDirectory(self)
        let file = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(file.text, "go forward ten meters")
        let wav = try Recordings.wav("goforward.raw", in: directory)
        async let answer = service.recognize([:])
        try await service.waitForListening(true)
        let player = try Player(wav, sink: stack.micSink)
        let heard = try await answer
        await player.waitUntilDone()
        XCTAssertEqual(heard.text, "go forward ten meters")

        let pid = service.daemon.pid
        let ours = Self.mappedLibraries(of: pid)
        XCTAssertFalse(ours.isEmpty)
        for library in ours where library.contains("pocketsphinx") || library.contains("sphinxbase") || library.contains("sphinxad") {
            XCTFail("voiceboxd maps \(library)")
        }
        let workers = Self.decoderWorkers(of: pid)
        XCTAssertFalse(workers.isEmpty, "a warm decoder worker is kept")
        for worker in workers {
            XCTAssert(Self.mappedLibraries(of: worker).contains { $0.hasPrefix("libpocketsphinx") }, "worker \(worker)")
        }
        print("METRIC voiceboxd maps \(ours.filter { $0.hasPrefix("lib") }.count) libraries, none of pocketsphinx")
    }

    /// SIGSEGV, abort, SIGKILL (the OOM killer) and SIGSYS (the seccomp filter) in the decoder
    /// worker while the microphone is heard: that Recognize fails with EngineUnavailable naming the
    /// signal, the microphone is released, and the next Recognize is answered at once.
    func testADecoderWorkerThatDiesMidMicrophoneFailsOnlyThatRecognition() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await service(stack)
        let directory = try makeTemporaryDirectory(self)
        let wav = try Recordings.wav("numbers.raw", in: directory)
        let pid = service.daemon.pid
        for signal in [SIGSEGV, SIGABRT, SIGKILL, SIGSYS] {
            let name = Termination.name(of: signal)
            let failing = Task { await service.recognitionError(["max_seconds": .double(20)]) }
            try await service.waitForListening(true)
            let player = try Player(wav, sink: stack.micSink)
            try await Task.sleep(for: .milliseconds(700))  // decoding is under way
            let workers = Self.decoderWorkers(of: pid)
            XCTAssertFalse(workers.isEmpty)
            for worker in workers { kill(worker, signal) }
            let error = await failing.value
            player.stop()
            XCTAssertEqual(error?.name, "org.voicebox.Error.EngineUnavailable", "\(name): \(error?.message ?? "no error")")
            XCTAssert(error?.message.contains(name) == true, "the error names \(name): \(error?.message ?? "")")
            XCTAssertNil(service.daemon.poll(), "voiceboxd must not die with its worker")
            try await service.waitForListening(false)

            let asked = ContinuousClock.now
            let next = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
            XCTAssertEqual(next.text, "go forward ten meters")
            let took = ContinuousClock.now - asked
            print("METRIC decoder worker killed by \(name) mid-microphone → the next Recognize answered in \(took)")
            XCTAssertLessThan(seconds(took), faultBound(3))
        }
    }

    /// The same mid-file: EngineUnavailable naming the signal; the next file at once.
    func testADecoderWorkerThatDiesMidFileFailsOnlyThatFile() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await service(stack)
        let pid = service.daemon.pid
        let wav = Recordings.path("librivox/sense_and_sensibility_01_austen_64kb-0870.wav")
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])  // warm workers
        let known = service.startedRecognitions
        let failing = Task { await service.recognitionError(["file": .string(wav)]) }
        _ = try await service.waitForNewRecognition(besides: known)
        try await Task.sleep(for: .milliseconds(300))
        for worker in Self.decoderWorkers(of: pid) { kill(worker, SIGSEGV) }
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
        let service = try await service(stack)
        let pid = service.daemon.pid
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        var workers: [pid_t] = []
        try await waitUntil("warm, confined decoder workers", timeout: .seconds(10)) {
            workers = Self.decoderWorkers(of: pid)
            return !workers.isEmpty && workers.allSatisfy { worker in
                ((try? String(contentsOfFile: "/proc/\(worker)/status", encoding: .utf8)) ?? "").contains("Seccomp:\t2")
            }
        }
        for worker in workers { XCTAssertEqual(kill(worker, SIGSTOP), 0) }
        service.daemon.signal(SIGKILL)
        try await waitUntil("the workers to go with voiceboxd", timeout: .seconds(2)) {
            workers.allSatisfy { !FileWorkerTests.running($0) }
        }
    }
}
