import Foundation
import Glibc
@testable import TestSupport
import VoiceboxCore
import VoiceboxSndfile
import VoiceboxSpawn
import XCTest
@testable import VoiceboxWorkers

/// The worker side of files against the in-process reader it replaces: the same samples, bit for
/// bit, in every format; the same refusals; a worker that dies fails its file, naming the signal;
/// the confinement holds.
final class WorkerAudioFilesTests: XCTestCase {
    private var workerPath: String {
        return Checkout.buildDirectory + "/voicebox-worker"
    }

    private lazy var files = WorkerAudioFiles(workerPath: workerPath)

    private func all(_ file: any AudioFile) throws -> [Int16] {
        var samples: [Int16] = []
        while true {
            let more = try file.read(maxSamples: 4096)
            if more.isEmpty { return samples }
            samples += more
        }
    }

    private func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-worker-tests-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    private func sox(_ arguments: [String]) throws {
        let ending = try Spawn.run(ChildSpec("/usr/bin/sox", arguments), timeout: .seconds(60))
        XCTAssertEqual(ending.termination, .exited(0), "sox \(arguments)")
    }

    /// 35 s of real speech (one librivox recording five times): its worker is still reading when a
    /// test has read the first samples.
    private func longRecording() throws -> String {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: Recordings.directory), "pocketsphinx-testdata")
        let long = try directory().appendingPathComponent("long.wav").path
        let wav = Recordings.path("librivox/sense_and_sensibility_01_austen_64kb-0870.wav")
        try sox([wav, wav, wav, wav, wav, long])
        return long
    }

    func testTheWorkerGivesTheSamplesTheReaderGivesInEveryFormat() throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: Recordings.directory), "pocketsphinx-testdata")
        let scratch = try directory()
        let wav = Recordings.path("librivox/sense_and_sensibility_01_austen_64kb-0870.wav")
        var paths = [Recordings.path("goforward.raw"), wav]
        for (name, options) in [("stereo-44k.flac", ["-r", "44100", "-c", "2"]), ("8k.ogg", ["-r", "8000"]),
                                ("float-22k.wav", ["-e", "floating-point", "-b", "32", "-r", "22050"])] {
            let target = scratch.appendingPathComponent(name).path
            try sox([wav] + options + [target])
            paths.append(target)
        }
        for path in paths {
            let expected = try all(AudioFileReader(path: path))
            let opened = try files.open(path: path)
            XCTAssertEqual(opened.duration, try AudioFileReader(path: path).duration, path)
            let got = try all(opened)
            XCTAssertGreaterThan(expected.count, 16_000, path)
            XCTAssertEqual(got.count, expected.count, path)
            XCTAssert(got == expected, "\(path): the worker's samples differ from the reader's")
        }
        // A descriptor: the same samples, and the caller's offset left alone.
        let fd = open(wav, O_RDONLY)
        defer { close(fd) }
        XCTAssertEqual(lseek(fd, 100, SEEK_SET), 100)
        XCTAssert(try all(files.open(descriptor: fd)) == all(AudioFileReader(path: wav)))
        XCTAssertEqual(lseek(fd, 0, SEEK_CUR), 100)
    }

    func testFilesThatAreNotAudioAreRefusedWithTheReadersReason() throws {
        let scratch = try directory()
        let text = scratch.appendingPathComponent("notes.txt").path
        try Data("not audio at all\n".utf8).write(to: URL(fileURLWithPath: text))
        let empty = scratch.appendingPathComponent("empty.wav").path
        XCTAssert(FileManager.default.createFile(atPath: empty, contents: Data()))
        for (path, says) in [(text, "not audio that libsndfile can decode"), (empty, "the file is empty"),
                             (scratch.path, "is a directory"), (scratch.appendingPathComponent("none.wav").path, "No such file")] {
            XCTAssertThrowsError(try files.open(path: path), path) { error in
                guard case RecognitionError.unreadableAudio(let why) = error else { return XCTFail("\(path): \(error)") }
                XCTAssert(why.contains(says) && why.contains(path), "\(path): \(why)")
            }
        }
    }

    /// Killed mid-file by each signal a crash, an abort or the OOM killer sends: the next read fails
    /// with unreadableAudio naming it; the worker is reaped.
    func testAWorkerThatDiesMidFileFailsTheFileNamingTheSignal() throws {
        let long = try longRecording()
        for signal in [SIGSEGV, SIGABRT, SIGKILL, SIGSYS] {
            let file = try XCTUnwrap(try files.open(path: long) as? WorkerAudioFile)
            XCTAssertFalse(try file.read(maxSamples: 4096).isEmpty)
            let worker = file.workerID
            XCTAssertEqual(kill(worker, signal), 0)
            XCTAssertThrowsError(try all(file)) { error in
                guard case RecognitionError.unreadableAudio(let why) = error else { return XCTFail("\(error)") }
                XCTAssert(why.contains(Termination.name(of: signal)) && why.contains(long), why)
            }
            XCTAssertEqual(kill(worker, 0), -1, "the worker was not reaped")
        }
    }

    /// A worker that stops sending (stopped here; looping on a hostile file alike) fails its file
    /// once `file-worker-answer` (made 0.5 s here) is over, saying so, and is gone once the file is.
    func testAStuckWorkerFailsItsFileWithinTheBound() throws {
        let long = try longRecording()
        let files = WorkerAudioFiles(workerPath: workerPath, bounds: Bounds([.fileWorkerAnswer: .milliseconds(500)]))
        var file: WorkerAudioFile? = try XCTUnwrap(try files.open(path: long) as? WorkerAudioFile)
        let worker = try XCTUnwrap(file?.workerID)
        XCTAssertEqual(kill(worker, SIGSTOP), 0)
        // Should the bound never fire, the worker is killed after 30 s: the read then fails naming
        // SIGKILL instead, and the test with it.
        let giveUp = DispatchWorkItem { kill(worker, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: giveUp)
        defer { giveUp.cancel() }
        XCTAssertThrowsError(try all(XCTUnwrap(file))) { error in
            guard case RecognitionError.unreadableAudio(let why) = error else { return XCTFail("\(error)") }
            XCTAssert(why.contains("sent nothing for 0.5 s and was stopped"), why)
        }
        file = nil
        XCTAssertEqual(kill(worker, 0), -1, "the worker was not reaped")
    }

    /// A worker asks to be killed when its parent dies, and Linux means the parent *thread*: a file
    /// opened on a thread that ends at once (as idle pool threads do) is still read whole.
    func testAWorkerOutlivesTheThreadThatOpenedItsFile() throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: Recordings.directory), "pocketsphinx-testdata")
        let path = Recordings.path("librivox/sense_and_sensibility_01_austen_64kb-0870.wav")
        let handOver = HandOver()
        let files = files
        let ended = DispatchSemaphore(value: 0)
        let thread = Thread {
            handOver.file = try? files.open(path: path)
            ended.signal()
        }
        thread.start()
        XCTAssertEqual(ended.wait(timeout: .now() + 10), .success)
        Thread.sleep(forTimeInterval: 0.3)  // the thread has ended by now
        let file = try XCTUnwrap(handOver.file)
        XCTAssert(try all(file) == all(AudioFileReader(path: path)))
    }

    /// A worker may use the descriptors it was given and compute. A socket, an exec, io_uring (which
    /// would open and connect past the filter) or ptrace kills it (SIGSYS); opening any file fails,
    /// for reading too; truncating, unlinking or renaming one, forking, or signalling another
    /// process fails; its own abort still ends it with SIGABRT.
    func testTheConfinementAllowsOnlyWhatAWorkerNeeds() throws {
        let scratch = try directory()
        let target = scratch.appendingPathComponent("target").path
        try Data("kept\n".utf8).write(to: URL(fileURLWithPath: target))
        func probe(_ arguments: [String]) throws -> (Termination, String) { try probeConfinement(workerPath, arguments) }
        for what in ["socket", "exec", "io_uring", "ptrace"] {
            let (ended, said) = try probe([what])
            XCTAssertEqual(ended, .signalled(SIGSYS), "\(what): \(said)")
        }
        // Under a sanitizer read-only opens stay allowed: its runtime reads /proc/self/maps.
        let reading = ProcessInfo.processInfo.environment["VOICEBOX_SANITIZER"] == nil ? "read: refused (Permission denied)" : "read: allowed"
        for (arguments, says) in [(["write", target], "write: refused (Permission denied)"),
                                  (["read", target], reading),
                                  (["read", "/etc/passwd"], reading),
                                  (["truncate", target], "truncate: refused (Operation not permitted)"),
                                  (["unlink", target], "unlink: refused (Operation not permitted)"),
                                  (["rename", target], "rename: refused (Operation not permitted)"),
                                  (["fork"], "fork: refused (Operation not permitted)"),
                                  (["kill"], "kill: refused (Operation not permitted)"),
                                  // Standard error is /dev/null here: a question reaches the kernel
                                  // (ENOTTY), typing into a terminal does not (EPERM), high bits or not.
                                  (["tcgets"], "tcgets: refused (Inappropriate ioctl for device)"),
                                  (["tiocsti"], "tiocsti: refused (Operation not permitted)"),
                                  (["tiocsti-high"], "tiocsti-high: refused (Operation not permitted)"),
                                  (["decoder:tiocsti"], "tiocsti: refused (Operation not permitted)")] {
            let (ended, said) = try probe(arguments)
            XCTAssertEqual(ended, .exited(0), "\(arguments)")
            XCTAssertEqual(said, says)
        }
        XCTAssertEqual(try String(contentsOfFile: target, encoding: .utf8), "kept\n")
        XCTAssertEqual(try probe(["abort"]).0, .signalled(SIGABRT))
    }
}

/// One file handed from the opening thread to the test, once, after that thread signalled (the
/// semaphore orders the write before the read): nothing else touches it.
private final class HandOver: @unchecked Sendable {
    var file: (any AudioFile)?
}
