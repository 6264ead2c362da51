import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import VoiceboxSpawn
import XCTest

/// These tests share one voiceboxd; the one that needs bounds of its own is in
/// `UnansweringDecoderWorkerTests`.
final class DecoderWorkerMicrophoneTests: ServiceTestCase {
    override class var sharesService: Bool { true }
    override class var usesRecordings: Bool { true }

    /// After a file, a microphone and a 48 kHz stream recognition, voiceboxd has mapped no part
    /// of pocketsphinx, nor libsndfile, nor libsamplerate, while its decoder workers have
    /// pocketsphinx: the decoding happened there, and the stream was resampled by the worker that
    /// read it.
    /// Nor has it mapped Foundation or glib, which kept it above 20 MiB at rest.
    // What the sound server decides here: the microphone
    func testTheServiceNeverMapsTheEngine() async throws {
        let (stack, service, directory) = (self.stack!, self.service!, self.directory!)
        let file = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(file.text, "go forward ten meters")
        let wav = try Recordings.wav("goforward.raw", in: directory)
        async let answer = service.recognize([:])
        try await service.waitForListening(true)
        let player = try stopsAtEnd(Player(wav, sink: stack.micSink))
        let heard = try await answer
        await player.waitUntilDone()
        XCTAssertEqual(heard.text, "go forward ten meters")
        // A stream at 48 kHz in stereo: converted by a worker, never by the service.
        let streamed = try await service.recognizeGoForwardAt48kHzInStereo(in: directory)
        XCTAssertEqual(streamed.text, "go forward ten meters")

        let pid = service.daemon.pid
        let ours = ServiceProcesses.mappedLibraries(of: pid)
        XCTAssertFalse(ours.isEmpty)
        for library in ours where library.contains("pocketsphinx") || library.contains("sphinxbase") || library.contains("sphinxad")
            || library.hasPrefix("libsndfile") || library.hasPrefix("libsamplerate") {
            XCTFail("voiceboxd maps \(library)")
        }
        // Nor libpulse, which brings libsndfile with it: the sound server is the audio helper's,
        // and the microphone Recognize above was heard through it.
        for library in ours where library.hasPrefix("libpulse") {
            XCTFail("voiceboxd maps \(library)")
        }
        let helpers = ServiceProcesses.audioHelpers(of: pid)
        XCTAssertEqual(helpers.count, 1, "one voicebox-audio")
        for helper in helpers {
            XCTAssert(ServiceProcesses.mappedLibraries(of: helper).contains { $0.hasPrefix("libpulse.so") }, "voicebox-audio \(helper)")
        }
        // Nor what was a third of its resident memory: Foundation (with ICU; what the service
        // needed of it now comes from libc and a small JSON coder of its own), and libspeechd with
        // glib (only its address lookup was used).
        for library in ours where ["libFoundation.so", "lib_FoundationICU.so", "libFoundationInternationalization.so",
                                   "libFoundationEssentials.so"].contains(library)
            || library.hasPrefix("libglib-") || library.hasPrefix("libspeechd") {
            XCTFail("voiceboxd maps \(library)")
        }
        let workers = ServiceProcesses.decoderWorkers(of: pid)
        XCTAssertFalse(workers.isEmpty, "a warm decoder worker is kept")
        for worker in workers {
            XCTAssert(ServiceProcesses.mappedLibraries(of: worker).contains { $0.hasPrefix("libpocketsphinx") }, "worker \(worker)")
        }
        print("METRIC voiceboxd maps \(ours.filter { $0.hasPrefix("lib") }.count) libraries, none of pocketsphinx, libsndfile, libsamplerate or libpulse")
    }

    /// SIGSEGV, abort, SIGKILL (the OOM killer) and SIGSYS (the seccomp filter) in the decoder
    /// worker while the microphone is heard: that Recognize fails with EngineUnavailable naming the
    /// signal, the microphone is released, and the next Recognize is answered.
    // What the sound server decides here: the microphone, released as the server sees it
    func testADecoderWorkerThatDiesMidMicrophoneFailsOnlyThatRecognition() async throws {
        let (stack, service, directory) = (self.stack!, self.service!, self.directory!)
        let wav = try Recordings.wav("numbers.raw", in: directory)
        let pid = service.daemon.pid
        for signal in [SIGSEGV, SIGABRT, SIGKILL, SIGSYS] {
            let name = Termination.name(of: signal)
            let known = service.startedRecognitions
            let failing = Task { await service.recognitionError(["max_seconds": .double(20), "partial_results": .boolean(true)]) }
            let id = try await service.waitForNewRecognition(besides: known)
            try await service.waitForListening(true)
            let player = try stopsAtEnd(Player(wav, sink: stack.micSink))
            try await waitUntil("a word heard: decoding is under way", timeout: .seconds(30)) {
                service.recognitionSignals(of: id).contains { $0.member == "RecognitionPartial" }
            }
            let workers = ServiceProcesses.decoderWorkers(of: pid)
            XCTAssertFalse(workers.isEmpty)
            for worker in workers { kill(worker, signal) }
            let error = await failing.value
            player.stop()
            XCTAssertEqual(error?.name, "org.voicebox.Error.EngineUnavailable", "\(name): \(error?.message ?? "no error")")
            XCTAssert(error?.message.contains(name) == true, "the error names \(name): \(error?.message ?? "")")
            XCTAssertNil(service.daemon.poll(), "voiceboxd must not die with its worker")
            try await service.waitForListening(false)

            let next = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
            XCTAssertEqual(next.text, "go forward ten meters")
        }
    }
}

final class UnansweringDecoderWorkerTests: XCTestCase {
    /// CancelRecognition while the decoder worker does not answer (stopped, as one stuck in a loop
    /// would be): the call fails with Cancelled, the stuck worker is gone, and the next Recognize
    /// is answered. Mid-file and mid-microphone. The worker's answer bound is an hour here
    /// (`worker-answer`): only the cancel's own stop of the worker (`worker-cancel`) can end the call.
    // What the sound server decides here: the microphone
    func testACancelEndsARecognitionWhoseWorkerDoesNotAnswer() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await startService(on: stack, extraArguments: ["--bound", "worker-answer=3600"])
        let pid = service.daemon.pid
        let directory = try makeTemporaryDirectory(self)
        let wav = try Recordings.wav("numbers.raw", in: directory)
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])  // warm workers
        for input in ["file", "microphone"] {
            let known = service.startedRecognitions
            let options: [String: DBusValue] = input == "file"
                ? ["file": .string(Recordings.path("librivox/sense_and_sensibility_01_austen_64kb-0870.wav"))]
                : ["max_seconds": .double(30)]
            let failing = Task { await service.recognitionError(options.merging(["partial_results": .boolean(true)]) { $1 }) }
            let id = try await service.waitForNewRecognition(besides: known)
            var player: Player?
            if input == "microphone" {
                try await service.waitForListening(true)
                player = try stopsAtEnd(Player(wav, sink: stack.micSink))
            }
            try await waitUntil("a word heard: decoding is under way", timeout: .seconds(30)) {
                service.recognitionSignals(of: id).contains { $0.member == "RecognitionPartial" }
            }
            let workers = ServiceProcesses.decoderWorkers(of: pid)
            for worker in workers { XCTAssertEqual(kill(worker, SIGSTOP), 0) }
            addTeardownBlock { for worker in workers { kill(worker, SIGCONT) } }
            // Stopped: the recognition's next request waits for an answer that does not come. The
            // cancel must find it waiting so (else it ends between requests, and no worker is
            // interrupted): a stopped worker that is not waiting for its next request says so.
            try await waitUntil("the workers stopped") { workers.allSatisfy(ForeignProcess.isStopped) }
            try await waitUntil("a request unanswered by a stopped worker", timeout: .seconds(30)) {
                workers.contains { !ServiceProcesses.waitsForRequest($0) }
            }
            _ = try await service.call("CancelRecognition")
            let error = await failing.value
            player?.stop()
            XCTAssertEqual(error?.name, "org.voicebox.Error.Cancelled", "\(input): \(error?.message ?? "no error")")
            XCTAssertNil(service.daemon.poll())
            for worker in workers { kill(worker, SIGCONT) }
            // The stuck worker that had the recognition was stopped; warm ones (stopped too, now
            // running again) may stay.
            try await waitUntil("the interrupted worker to be gone", timeout: .seconds(10)) {
                workers.contains { !ServiceProcesses.running($0) }
            }
            let next = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
            XCTAssertEqual(next.text, "go forward ten meters", input)
        }
    }
}
