import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import VoiceboxThreads
import XCTest

/// Recognize with `stream`: the caller's own audio through a pipe, into a real voiceboxd and the
/// real model, at any speed, in any format, cut short, cancelled, ended by another process, odd.
/// (Many streams at once, and stalled ones: StreamTurnTests, StreamYieldTests, StreamCutTests.)
/// The tests share one voiceboxd: each ends what it started.
final class StreamRecognitionTests: SharedRecognitionTestCase {
    private let expected = Streams.expected

    // MARK: Speeds and formats

    func testFloatsAt48kHzInStereoGiveTheSameWords() async throws {
        let heard = try await service.recognizeGoForwardAt48kHzInStereo(in: directory)
        XCTAssertEqual(heard.text, expected)
        XCTAssertEqual(heard.duration, 2.786, accuracy: 0.01)
    }

    func testWithSilenceSecondsItEndsAtTheEndOfSpeech() async throws {
        // The speech, then 3 s of digital silence, and the writer stays: only the end of speech ends it.
        let writer = try PipeWriter(try Recordings.bytes() + [UInt8](repeating: 0, count: 96_000), piece: 640, pause: .milliseconds(20),
                                    keepOpen: true)
        let heard = try await service.recognize(["stream": .unixFD(writer.readEnd), "silence_seconds": .double(1)])
        writer.closeReadEnd()
        XCTAssertEqual(heard.reason, "endpoint")
        XCTAssertEqual(heard.text, expected)
        XCTAssertLessThan(heard.duration, 4.5, "ended about 1 s after the last word (2.6 s), not at the end of the silence")
    }

    func testGrammarsKeyphrasesAndMaxSecondsApplyToAStream() async throws {
        let (service, directory) = (self.service!, self.directory!)
        let grammar = try Recordings.cardsGrammar()
        for id in ["002", "005"] {
            let raw = directory.appendingPathComponent("\(id).raw").path
            XCTAssertEqual(try runProgram(["sox", Recordings.path("cards/\(id).wav"), "-t", "raw", "-e", "signed", "-b", "16",
                                           "-r", "16000", "-c", "1", raw]).status, 0)
            let asFile = try await service.recognize(["file": .string(Recordings.path("cards/\(id).wav")), "grammar": .string(grammar)])
            let writer = try PipeWriter(try Array(Data(contentsOf: URL(fileURLWithPath: raw))))
            let asStream = try await service.recognize(["stream": .unixFD(writer.readEnd), "grammar": .string(grammar)])
            writer.closeReadEnd()
            XCTAssertEqual(asStream.text, asFile.text, id)
            XCTAssertFalse(asStream.text.isEmpty, id)
        }
        let spotting = try PipeWriter(try Recordings.bytes())
        let spotted = try await service.recognize(["stream": .unixFD(spotting.readEnd), "keyphrases": .stringArray(["forward"])])
        spotting.closeReadEnd()
        XCTAssertEqual(spotted.text, "forward")
        let cutting = try PipeWriter(try Recordings.bytes(), keepOpen: true)
        let cut = try await service.recognize(["stream": .unixFD(cutting.readEnd), "max_seconds": .double(1.5)])
        cutting.closeReadEnd()
        XCTAssertEqual(cut.reason, "max_duration")
        XCTAssertEqual(cut.duration, 1.5, accuracy: 1e-9)
    }

    func testAnotherProcessEndsAStreamByItsIDAndAFastWriterWaitsForTheDecoder() async throws {
        let (service, stack) = (self.service!, self.stack!)
        // 21 minutes of audio, written as fast as the pipe takes it: the service reads ahead 20 min
        // at most (38.4 MB; a stream that ends within them is decoded in parts), then the writer
        // must wait for the decoder (back-pressure), not hand everything over to a buffer.
        let bytes = try Streams.goforward(times: 452)
        // The model loaded first, so memory compares like with like.
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        let pid = service.daemon.pid
        let memoryBefore = residentBytes(pid) ?? 0
        let writer = try PipeWriter(bytes)
        let running = Task { try await service.recognize(["stream": .unixFD(writer.readEnd), "partial_results": .boolean(true)]) }
        let id = try await service.waitForNewRecognition(besides: service.startedRecognitions)
        writer.closeReadEnd()
        // Three of the 452 repetitions decoded: a service that buffered would have taken all 40 MB by now.
        try await waitUntil("three repetitions decoded", timeout: .seconds(120)) {
            service.recognitionSignals(of: id).contains { ($0.arguments.last?.string ?? "").split(separator: " ").count >= 12 }
        }
        let peak = residentBytes(pid) ?? 0
        let writerDone = await writer.result(timeout: .zero)
        XCTAssertNil(writerDone, "the writer finished 40 MB while 8 s of it were decoded: the service buffered it instead of pushing back")
        // The read-ahead (38.4 MB), and no more than before it came.
        if !underSanitizer { XCTAssertLessThan(peak - memoryBefore, (40 + 32) << 20, "VmRSS grew by \((peak - memoryBefore) >> 20) MiB while streaming") }
        // EndRecognition from another process (a shortcut's second press): what was heard so far.
        let other = try BusConnection(address: stack.busAddress)
        try await ServiceHarness.call("EndRecognition", [.uint64(id), .boolean(false)], on: other)
        let heard = try await running.value
        XCTAssertEqual(heard.reason, "stopped")
        XCTAssertTrue(heard.text.hasPrefix("go forward ten meters go forward ten meters go forward ten meters"), heard.text)
        XCTAssertLessThan(heard.duration, 1200)
        let writerSaw = await writer.result(timeout: .seconds(10))
        XCTAssertEqual(writerSaw, .brokenPipe, "the service let go of the pipe when the recognition ended")
        await other.close()
    }

    // MARK: Endings

    func testAnEndOfFileMidUtteranceAnswersWithWhatWasHeard() async throws {
        let writer = try PipeWriter(Array(try Recordings.bytes()[0..<48_000]))  // 1.5 s
        let heard = try await service.recognize(["stream": .unixFD(writer.readEnd)])
        writer.closeReadEnd()
        XCTAssertEqual(heard.reason, "end_of_file")
        XCTAssertEqual(heard.duration, 1.5, accuracy: 1e-6)
        XCTAssertTrue(heard.text.hasPrefix("go"), heard.text)
        XCTAssertFalse(heard.text.contains("meters"), heard.text)
    }

    func testCancelWhileTheWriterSendsClosesTheDescriptor() async throws {
        let service = self.service!
        let pid = service.daemon.pid
        // A recognition first: what the runtime opens once for good (libdispatch's timerfd, at the
        // model's first idle timer) is in the count before, not taken for a leak after.
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        try await service.waitUntilSettled()
        let before = await settledDescriptorCount(pid, atMost: 0, settle: .milliseconds(300)) ?? 0
        let opened = openDescriptors(pid)
        let known = service.startedRecognitions
        // A minute of audio, sent in real time: the writer is still sending when the cancel comes.
        let long = try Streams.goforward(times: 20)
        let writer = try PipeWriter(long, piece: 640, pause: .milliseconds(20))
        let waiting = Task { () -> DBusError? in
            do {
                _ = try await service.recognize(["stream": .unixFD(writer.readEnd)])
                return nil
            } catch { return error as? DBusError }
        }
        let id = try await service.waitForNewRecognition(besides: known)
        writer.closeReadEnd()  // ours; the service holds its own
        try await waitUntil("the stream to be decoded") { service.recognitionSignals(of: id).contains { $0.member == "AudioLevel" } }
        try await service.proxy.call(Speech1.cancelRecognition)
        let error = await waiting.value
        XCTAssertEqual(error?.name, "org.voicebox.Error.Cancelled", error?.message ?? "it answered")
        // The service let go of the pipe: the writer's next write fails (EPIPE).
        let writerSaw = await writer.result(timeout: .seconds(10))
        XCTAssertEqual(writerSaw, .brokenPipe, "the writer kept writing into a pipe nobody reads")
        let after = await settledDescriptorCount(pid, atMost: before)
        XCTAssertEqual(after, before, "a descriptor stayed open: \(descriptorsAdded(opened, openDescriptors(pid)))")
    }

    /// A stream that is not 16 kHz mono s16le is read and converted where it is read, by a
    /// confined worker of its own (`voicebox-worker audio-stream`), which goes with its call: a
    /// cancel leaves none behind, and one that dies (SIGSEGV, SIGKILL) fails only that
    /// recognition, naming the signal; the writer's next write fails, and the next stream is heard.
    func testAConvertedStreamsWorkerGoesWithItsCall() async throws {
        let service = self.service!
        let pid = service.daemon.pid
        let raw = directory.appendingPathComponent("long.raw").path
        try Data(Streams.goforward(times: 20)).write(to: URL(fileURLWithPath: raw))
        let path = directory.appendingPathComponent("long.f32").path
        try Recordings.sox(raw: raw, to: path, output: ["-t", "raw", "-e", "floating-point", "-b", "32", "-L"],
                           effects: ["rate", "48000", "channels", "2"])
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        let format: [String: DBusValue] = ["stream_format": .string("f32le"), "stream_rate": .uint32(48_000),
                                           "stream_channels": .uint32(2)]
        for ending in ["cancel", "SIGSEGV", "SIGKILL"] {
            let known = service.startedRecognitions
            // 56 s of audio in real time (384,000 bytes a second): still sending when the end comes.
            let writer = try PipeWriter(bytes, piece: 7_680, pause: .milliseconds(20))
            let fd = writer.readEnd
            let waiting = Task { await service.recognitionError(format.merging(["stream": .unixFD(fd)]) { $1 }) }
            let id = try await service.waitForNewRecognition(besides: known)
            writer.closeReadEnd()  // ours; the service and its converter hold their own
            try await waitUntil("the stream to be decoded") { service.recognitionSignals(of: id).contains { $0.member == "AudioLevel" } }
            let converters = ServiceProcesses.workers(of: pid, mode: WorkerProtocol.audioStreamMode)
            XCTAssertEqual(converters.count, 1, "one converter for the stream")
            switch ending {
            case "cancel": try await service.proxy.call(Speech1.cancelRecognition)
            case "SIGSEGV": kill(converters.first ?? 0, SIGSEGV)
            default: kill(converters.first ?? 0, SIGKILL)
            }
            let error = await waiting.value
            if ending == "cancel" {
                XCTAssertEqual(error?.name, "org.voicebox.Error.Cancelled", error?.message ?? "it answered")
            } else {
                XCTAssertEqual(error?.name, "org.voicebox.Error.EngineUnavailable", error?.message ?? "it answered")
                XCTAssert(error?.message.contains(ending) ?? false, "\(ending): \(error?.message ?? "")")
            }
            let writerSaw = await writer.result(timeout: .seconds(10))
            XCTAssertEqual(writerSaw, .brokenPipe, "\(ending): the writer kept writing into a pipe nobody reads")
            try await waitUntil("\(ending): the converter to be gone") {
                ServiceProcesses.workers(of: pid, mode: WorkerProtocol.audioStreamMode).isEmpty
            }
        }
        let heard = try await service.recognizeGoForwardAt48kHzInStereo(in: directory)
        XCTAssertEqual(heard.text, expected)
    }

    // MARK: Bad input

    func testOddStreamsAreRefusedAndTheServiceGoesOn() async throws {
        let service = self.service!
        func refusal(_ options: [String: DBusValue]) async -> String {
            guard let error = await service.recognitionError(options) else { return "answered" }
            return "\(error.name): \(error.message)"
        }
        let odd = try PipeWriter([1, 2, 3])
        let refused1 = await refusal(["stream": .unixFD(odd.readEnd)])
        XCTAssertEqual(refused1,
                       "org.voicebox.Error.InvalidArgument: option 'stream': it ended with 1 bytes that are not a whole frame of 2 (s16le, 1 channels)")
        odd.closeReadEnd()
        let floats: [Float] = [0.5, .nan]
        let nan = try PipeWriter(floats.withUnsafeBytes { Array($0) })
        let refused2 = await refusal(["stream": .unixFD(nan.readEnd), "stream_format": .string("f32le")])
        XCTAssertEqual(refused2,
                       "org.voicebox.Error.InvalidArgument: option 'stream': sample 1 is NaN, not a number f32le audio can hold")
        nan.closeReadEnd()
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0, &pair), 0)
        defer { close(pair[0]); close(pair[1]) }
        let refused3 = await refusal(["stream": .unixFD(pair[0])])
        XCTAssertEqual(refused3,
                       "org.voicebox.Error.InvalidArgument: option 'stream': it is a socket that is not a stream (datagrams or packets); pass a pipe or a stream socket")
        let null = open("/dev/zero", O_RDONLY)
        defer { close(null) }
        let refused4 = await refusal(["stream": .unixFD(null)])
        XCTAssertEqual(refused4,
                       "org.voicebox.Error.InvalidArgument: option 'stream': it is a character device; pass a pipe or a stream socket")
        let refused5 = await refusal(["stream_rate": .uint32(16_000)])
        XCTAssertEqual(refused5,
                       "org.voicebox.Error.InvalidArgument: option 'stream_rate' describes option 'stream', which is missing")
        let sparse = open(directory.appendingPathComponent("huge.raw").path, O_RDWR | O_CREAT, 0o600)
        defer { close(sparse) }
        XCTAssertEqual(ftruncate(sparse, 100 << 30), 0)
        let tooLarge = await refusal(["stream": .unixFD(sparse)])
        XCTAssertTrue(tooLarge.hasPrefix("org.voicebox.Error.TooLarge: the stream holds 3355443 s of audio"), tooLarge)
        let heard = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(heard.text, expected)
    }

    // MARK: The client

    func testTheClientReadsStandardInput() async throws {
        let raw = Recordings.path("goforward.raw")
        let listen = try await shell("cat \(raw) | \"$0\" listen --stdin")
        XCTAssertEqual(listen.status, 0)
        XCTAssertEqual(listen.output, expected + "\n")
        let path = directory.appendingPathComponent("stereo.f32").path
        try Recordings.sox(raw: raw, to: path, output: ["-t", "raw", "-e", "floating-point", "-b", "32", "-L"],
                           effects: ["rate", "48000", "channels", "2"])
        let json = try await shell("\"$0\" listen --stdin --format f32le --rate 48000 --channels 2 --json < \(path)")
        XCTAssertEqual(json.status, 0)
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        XCTAssertEqual(object?["text"] as? String, expected)
        XCTAssertEqual(object?["reason"] as? String, "end_of_file")
        let dictated = try await shell("cat \(raw) | \"$0\" dictate --stdin --output stdout --no-cue")
        XCTAssertEqual(dictated.status, 0)
        XCTAssertEqual(dictated.output, "Go forward ten meters\n")
        let empty = try await shell("\"$0\" listen --stdin < /dev/null")
        XCTAssertEqual(empty.status, 1, "a device is refused by the service (InvalidArgument)")
        let closed = try await shell("\"$0\" listen --stdin 0<&-")
        XCTAssertEqual(closed.status, 64, "standard input closed: said, not its bus socket sent as the audio")
        let nothing = try await shell("printf '' | \"$0\" listen --stdin")
        XCTAssertEqual(nothing.status, 2, "an empty pipe: nothing was heard")
    }

    /// Runs `script` in sh with $0 the client; its exit status and standard output.
    private func shell(_ script: String) async throws -> (status: Int32, output: String) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        let process = try Subprocess("/bin/sh", ["-c", script, stack.clientPath], stdoutFD: fds[1])
        close(fds[1])
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while case let count = read(fds[0], &buffer, buffer.count), count > 0 { output.append(contentsOf: buffer[0..<count]) }
        close(fds[0])
        let status = await process.wait(timeout: .seconds(60)) ?? -1
        return (status, String(decoding: output, as: UTF8.self))
    }
}
