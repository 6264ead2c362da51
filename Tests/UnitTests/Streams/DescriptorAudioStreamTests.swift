import Foundation
import Glibc
@testable import TestSupport
import XCTest
import VoiceboxPocketsphinx
import CSamplerate
import VoiceboxSndfile
@testable import VoiceboxSamplerate
@testable import VoiceboxStreams
import VoiceboxCore
import VoiceboxThreads
import VoiceboxWorkers

extension DescriptorAudioStream {
    /// One for the whole test process, as the service keeps one: a converter dies with the
    /// launcher thread that started it (PR_SET_PDEATHSIG), and a launcher made for one stream
    /// ended its thread as soon as it was dropped, killing a converter still at work (CI saw
    /// "the stream's converter was killed by SIGKILL").
    static let converters = WorkerAudioFiles(workerPath: Checkout.buildDirectory + "/voicebox-worker")

    /// As the service opens them: a stream that is not 16 kHz mono s16le converted by the real
    /// `voicebox-worker audio-stream`.
    convenience init(_ input: StreamInput) throws {
        try self.init(input, converters: Self.converters)
    }
}

/// Raw PCM through a real pipe or socket, read as the service reads a `stream`, decoded by the
/// real model.
final class DescriptorAudioStreamTests: XCTestCase {
    /// A pipe whose write end a thread fills with `bytes` (in `piece`s, `pause` apart), then
    /// closes unless `keepOpen`. Returns the read end, which the test owns.
    private func pipeSending(_ bytes: [UInt8], piece: Int = 65_536, pause: Duration = .zero, keepOpen: Bool = false) -> Int32 {
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        let writer = ends[1]
        Thread.detachNewThread {
            signal(SIGPIPE, SIG_IGN)  // the test process's: a reader that has gone is an error to see, not a death
            var offset = 0
            while offset < bytes.count {
                let count = min(piece, bytes.count - offset)
                let wrote = bytes[offset..<offset + count].withUnsafeBytes { write(writer, $0.baseAddress, count) }
                if wrote <= 0 { break }
                offset += wrote
                if pause > .zero { usleep(UInt32(pause / .microseconds(1))) }
            }
            if keepOpen { usleep(30_000_000) }
            close(writer)
        }
        addTeardownBlock { close(ends[0]) }
        return ends[0]
    }

    private func words(_ stream: any AudioStream) async throws -> FileReading.Outcome {
        let decoder = try await TestData.engine.makeDecoder(.init())
        return try await FileReading.read(stream, through: decoder)
    }

    private func recording(_ name: String = "goforward.raw") throws -> [UInt8] {
        try Array(Data(contentsOf: URL(fileURLWithPath: Recordings.path(name))))
    }

    /// A stream's floats become the 16-bit samples a file's do (libsamplerate's conversion, which
    /// file workers use): the same for edges, halves, out-of-range and a spread of values.
    func testFloatsBecomeTheSamplesLibsamplerateMakes() {
        var values: [Float] = [0, 1, -1, 0.5, -0.5, 2, -2, 0.7 / 32_768, -0.2 / 32_768, 0.5 / 32_768, -0.5 / 32_768,
                               1.5 / 32_768, 32_766.5 / 32_768, -32_767.5 / 32_768, .greatestFiniteMagnitude, -.greatestFiniteMagnitude]
        var generator = SystemRandomNumberGenerator()
        values += (0..<100_000).map { _ in Float.random(in: -1.1...1.1, using: &generator) }
        var expected = [Int16](repeating: 0, count: values.count)
        src_float_to_short_array(values, &expected, Int32(values.count))
        let ours = values.map(PCMUnpacker.sample)
        for (index, (mine, theirs)) in zip(ours, expected).enumerated() where mine != theirs {
            XCTFail("\(values[index]): \(mine), libsamplerate \(theirs)")
            break
        }
    }

    func testAStreamGivesTheFilesWordsAtAnySpeedAndInAnySplit() async throws {
        try TestData.requireModel()
        let file = try await TestData.engine.transcribeFile(path: Recordings.path("goforward.raw"))
        XCTAssertEqual(file.result.text, "go forward ten meters")
        let fast = try DescriptorAudioStream(StreamInput(descriptor: pipeSending(try recording())))
        let asFast = try await words(fast)
        XCTAssertEqual(asFast.result.text, file.result.text)
        XCTAssertEqual(asFast.seconds, file.seconds, accuracy: 1e-9)
        XCTAssertNil(fast.stop)
        // Odd pieces (a sample split between writes), 20 ms apart: about real time.
        let paced = try DescriptorAudioStream(StreamInput(descriptor: pipeSending(try recording(), piece: 641, pause: .milliseconds(20))))
        let asPaced = try await words(paced)
        XCTAssertEqual(asPaced.result.text, file.result.text)
        XCTAssertEqual(asPaced.seconds, file.seconds, accuracy: 1e-9)
        XCTAssertNil(paced.stop, "read to its end, waiting for the writer")
    }

    func testFloatsAtAnotherRateWithChannelsGiveTheSameWords() async throws {
        try TestData.requireModel()
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/sox"), "sox is not installed")
        let directory = try makeTemporaryDirectory(self)
        let path = directory.appendingPathComponent("stereo.f32").path
        XCTAssertNotNil(programOutput("/usr/bin/sox", ["-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1",
                                                    Recordings.path("goforward.raw"), "-t", "raw", "-e", "floating-point", "-b", "32",
                                                    "-L", path, "rate", "48000", "channels", "2"]))
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        let stream = try DescriptorAudioStream(StreamInput(descriptor: pipeSending(bytes), encoding: .f32le, rate: 48_000, channels: 2))
        let outcome = try await words(stream)
        XCTAssertEqual(outcome.result.text, "go forward ten meters")
        XCTAssertEqual(outcome.seconds, 2.786, accuracy: 0.01)
    }

    func testOddInputIsRefusedNamingWhatIsWrong() throws {
        let odd = try DescriptorAudioStream(StreamInput(descriptor: pipeSending([1, 2, 3])))
        XCTAssertThrowsError(try odd.read(maxSamples: 2048)) { error in
            XCTAssertEqual(error as? RecognitionError,
                           .invalidStream("it ended with 1 bytes that are not a whole frame of 2 (s16le, 1 channels)"))
        }
        var floats: [Float] = [0.1, -0.2, .nan, 0.3]
        let nan = try DescriptorAudioStream(StreamInput(descriptor: pipeSending(floats.withUnsafeBytes { Array($0) }), encoding: .f32le))
        XCTAssertThrowsError(try nan.read(maxSamples: 2048)) { error in
            XCTAssertEqual(error as? RecognitionError, .invalidStream("sample 2 is NaN, not a number f32le audio can hold"))
        }
        // Finite samples whose sum passes Float's limit are mixed, not turned into infinity.
        let huge: [Float] = [3e38, 3e38, 0.5, 0.5]
        let loud = try DescriptorAudioStream(StreamInput(descriptor: pipeSending(huge.withUnsafeBytes { Array($0) }), encoding: .f32le,
                                                         rate: 16_000, channels: 2))
        XCTAssertEqual(try loud.read(maxSamples: 2048), [32_767, 16_384])
        floats[2] = -.infinity
        let infinite = try DescriptorAudioStream(StreamInput(descriptor: pipeSending(floats.withUnsafeBytes { Array($0) }),
                                                             encoding: .f32le, rate: 16_000, channels: 2))
        XCTAssertThrowsError(try infinite.read(maxSamples: 2048)) { error in
            XCTAssertEqual(error as? RecognitionError, .invalidStream("sample 2 is -infinity, not a number f32le audio can hold"))
        }
    }

    func testOnlyAPipeAStreamSocketOrAFileIsRead() throws {
        func refusal(_ fd: Int32) -> String? {
            do {
                _ = try DescriptorAudioStream(StreamInput(descriptor: fd))
                return nil
            } catch {
                guard case .invalidStream(let why)? = error as? RecognitionError else { return "\(error)" }
                return why
            }
        }
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0, &pair), 0)
        defer { close(pair[0]); close(pair[1]) }
        XCTAssertEqual(refusal(pair[0]), "it is a socket that is not a stream (datagrams or packets); pass a pipe or a stream socket")
        let null = open("/dev/null", O_RDONLY)
        defer { close(null) }
        XCTAssertEqual(refusal(null), "it is a character device; pass a pipe or a stream socket")
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        defer { close(ends[0]); close(ends[1]) }
        XCTAssertEqual(refusal(ends[1]), "it is open for writing only")
        XCTAssertEqual(refusal(9_999), "the descriptor is not open")
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)  // autobind: an abstract name of the kernel's choosing
        XCTAssertEqual(withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sa_family_t>.size)) }
        }, 0)
        XCTAssertEqual(listen(listener, 1), 0)
        XCTAssertEqual(refusal(listener), "it is a listening socket; pass a connected one")
        let unconnected = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(unconnected) }
        XCTAssertEqual(refusal(unconnected), "it is a stream socket that is not connected; pass a connected one")
        let path = open("/dev/null", 0o10000000)  // O_PATH
        defer { close(path) }
        XCTAssertEqual(refusal(path), "it is an O_PATH descriptor, which cannot be read; pass one opened for reading")
        let both = open("/proc/self/fd/\(ends[0])", O_RDWR)
        defer { close(both) }
        XCTAssertEqual(refusal(both), "it is a pipe opened for reading and writing, which would never end; pass its read end, opened read-only")
    }

    func testARegularFileSaysHowLongItIs() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory.appendingPathComponent("huge.raw").path
        let fd = open(path, O_RDWR | O_CREAT, 0o600)
        defer { close(fd) }
        XCTAssertEqual(ftruncate(fd, 100 << 30), 0, "a 100 GiB sparse file")
        let stream = try DescriptorAudioStream(StreamInput(descriptor: fd))
        XCTAssertEqual(try XCTUnwrap(stream.duration), Double(100 << 30) / 32_000, accuracy: 1)
        XCTAssertNil(try DescriptorAudioStream(StreamInput(descriptor: pipeSending([]))).duration, "a pipe does not say")
    }

    func testARegularFileIsReadFromTheCallersOffsetWhichStaysWhereItWas() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory.appendingPathComponent("ramp.raw").path
        let samples = (0..<4_000).map { Int16($0) }
        try samples.withUnsafeBytes { Data($0) }.write(to: URL(fileURLWithPath: path))
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        XCTAssertEqual(lseek(fd, 2_000, SEEK_SET), 2_000)
        let stream = try DescriptorAudioStream(StreamInput(descriptor: fd))
        XCTAssertEqual(try XCTUnwrap(stream.duration), 3_000.0 / 16_000, accuracy: 1e-9)
        var read: [Int16] = []
        while case let chunk = try stream.read(maxSamples: 512), !chunk.isEmpty { read += chunk }
        XCTAssertEqual(read, Array(samples[1_000...]))
        XCTAssertEqual(lseek(fd, 0, SEEK_CUR), 2_000, "the caller's offset moved")
    }

    func testAStreamSocketIsReadToItsEnd() async throws {
        try TestData.requireModel()
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair), 0)
        defer { close(pair[0]) }
        let bytes = try recording()
        let writer = pair[1]
        Thread.detachNewThread {
            var offset = 0
            while offset < bytes.count {
                let wrote = bytes[offset...].withUnsafeBytes { write(writer, $0.baseAddress, min(8_192, $0.count)) }
                if wrote <= 0 { break }
                offset += wrote
            }
            close(writer)
        }
        let outcome = try await words(DescriptorAudioStream(StreamInput(descriptor: pair[0])))
        XCTAssertEqual(outcome.result.text, "go forward ten meters")
    }

    func testAWriterThatResetsItsConnectionEndsTheStreamWithWhatCame() throws {
        // TCP on loopback: a close with SO_LINGER 0 resets the connection (unix sockets cannot).
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")),
                                  sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        XCTAssertEqual(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }, 0)
        XCTAssertEqual(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }, 0)
        XCTAssertEqual(listen(listener, 1), 0)
        let writer = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertEqual(withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(writer, $0, length) } }, 0)
        let reader = accept(listener, nil, nil)
        defer { close(reader) }
        let stream = try DescriptorAudioStream(StreamInput(descriptor: reader))
        var bytes = [UInt8](repeating: 0, count: 3_201)  // 1,600 samples and half of one more
        XCTAssertEqual(write(writer, &bytes, bytes.count), bytes.count)
        XCTAssertEqual(try stream.read(maxSamples: 1_600).count, 1_600)
        // Something of ours unread by the writer makes its close a reset.
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        XCTAssertEqual(setsockopt(writer, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size)), 0)
        close(writer)
        XCTAssertEqual(try stream.read(maxSamples: 1_600), [], "the end of the stream, not an error")
        XCTAssertNil(stream.stop)
    }

    /// The writers keep their pipes open for 30 s, sending nothing: `stop` says the idle bound
    /// (not the writer's close) or the wake (not the idle bound) ended the wait.
    func testAStallEndsAfterTheIdleBoundAndAWakeAtOnce() throws {
        let stalled = try DescriptorAudioStream(StreamInput(descriptor: pipeSending([0, 0, 0, 0], keepOpen: true), idleSeconds: 0.3))
        let started = ContinuousClock.now
        XCTAssertEqual(try stalled.read(maxSamples: 2048), [0, 0], "what came before the stall")
        XCTAssertEqual(stalled.stop, .idle)
        XCTAssertEqual(try stalled.read(maxSamples: 2048), [], "and then nothing: it does not wait again")
        XCTAssertGreaterThanOrEqual(ContinuousClock.now - started, .seconds(0.29), "not before the idle bound")

        let waiting = try DescriptorAudioStream(StreamInput(descriptor: pipeSending([], keepOpen: true), idleSeconds: 3600))
        let waker = waiting.waker
        Thread.detachNewThread {
            usleep(200_000)
            waker.wake()
        }
        XCTAssertEqual(try waiting.read(maxSamples: 2048), [])
        XCTAssertEqual(waiting.stop, .woken, "woken, not ended by the writer's close")
        waiting.close()
        waiting.close()
    }

    func testTimeSpentDecodingIsNotTheWritersIdleness() throws {
        // 1 s of audio ready in the pipe; the reader takes 0.3 s per chunk, three times the idle bound.
        let stream = try DescriptorAudioStream(StreamInput(descriptor: pipeSending([UInt8](repeating: 0, count: 32_000)), idleSeconds: 0.1))
        var samples = 0
        while case let chunk = try stream.read(maxSamples: 4_000), !chunk.isEmpty {
            samples += chunk.count
            usleep(300_000)
        }
        XCTAssertEqual(samples, 16_000, "all of it, no timeout")
        XCTAssertNil(stream.stop)
    }

    func testATrickleEndsAsAStallDoes() throws {
        // 10 ms of audio every 250 ms keeps bytes coming, 25 times slower than real time: it
        // falls behind by the idle bound (0.5 s) after about 0.5 s.
        let trickle = try DescriptorAudioStream(StreamInput(descriptor: pipeSending([UInt8](repeating: 0, count: 320_000), piece: 320,
                                                                                    pause: .milliseconds(250)), idleSeconds: 0.5))
        var samples = 0
        while case let chunk = try trickle.read(maxSamples: 2048), !chunk.isEmpty { samples += chunk.count }
        XCTAssertEqual(trickle.stop, .idle)
        // 160 samples a piece: ended within a few pieces, not at the end of its 160,000.
        XCTAssertLessThan(samples, 2_000, "a trickle kept the stream")
    }

    func testAWaitForTheWriterGivesTheDecoderBackAndTakesItAgainBeforeMoreAudio() throws {
        // 0.2 s of audio, a pause of 0.6 s, 0.2 s more.
        let fd = pipeSending([UInt8](repeating: 0, count: 12_800), piece: 6_400, pause: .milliseconds(600))
        let stream = try DescriptorAudioStream(StreamInput(descriptor: fd))
        let calls = Locked<[String]>([])
        stream.parking = AudioStreamParking(after: .milliseconds(100), park: { calls.withLock { $0.append("park") } },
                                            resume: { calls.withLock { $0.append("resume") }; return true })
        var samples = 0
        while case let chunk = try stream.read(maxSamples: 2048), !chunk.isEmpty { samples += chunk.count }
        XCTAssertEqual(samples, 6_400)
        XCTAssertEqual(calls.withLock { $0 }.prefix(2), ["park", "resume"], "parked during the pause, resumed before decoding more")
        XCTAssertTrue(calls.withLock { $0 }.count % 2 == 0 || calls.withLock { $0 }.last == "park")

        // A resume refused (the recognition was stopped meanwhile): nothing more is read.
        let refused = try DescriptorAudioStream(StreamInput(descriptor: pipeSending([UInt8](repeating: 0, count: 12_800), piece: 6_400,
                                                                                    pause: .milliseconds(300))))
        refused.parking = AudioStreamParking(after: .milliseconds(100), park: {}, resume: { false })
        XCTAssertEqual(try refused.read(maxSamples: 6_400).count, 3_200)
        XCTAssertEqual(refused.stop, .woken)
        XCTAssertEqual(try refused.read(maxSamples: 6_400), [])
    }

    func testAWriterSilentPastTheReleaseTimeEndsTheReadShortAndParked() throws {
        // 0.2 s of audio, a pause of 0.8 s, 0.2 s more; the turn goes back at 0.1 s, the decoder at 0.4 s.
        let fd = pipeSending([UInt8](repeating: 0, count: 12_800), piece: 6_400, pause: .milliseconds(800))
        let stream = try DescriptorAudioStream(StreamInput(descriptor: fd))
        let calls = Locked<[String]>([])
        stream.parking = AudioStreamParking(after: .milliseconds(100), releaseAfter: .milliseconds(400),
                                            park: { calls.withLock { $0.append("park") } },
                                            resume: { calls.withLock { $0.append("resume") }; return true })
        XCTAssertEqual(try stream.read(maxSamples: 3_200).count, 3_200)
        XCTAssertFalse(stream.writerIdle)
        XCTAssertEqual(try stream.read(maxSamples: 3_200), [], "short: the writer is silent")
        XCTAssertTrue(stream.writerIdle)
        XCTAssertNil(stream.stop, "not the end: the reader gives its decoder back and waits")
        XCTAssertEqual(calls.withLock { $0 }, ["park"], "still parked")
        XCTAssertEqual(try stream.waitForWriter(upTo: nil), .audio, "the writer sends again")
        XCTAssertFalse(stream.writerIdle)
        XCTAssertEqual(calls.withLock { $0 }, ["park"], "resuming is the reader's, after waitForWriter")
        XCTAssertEqual(try stream.read(maxSamples: 3_200).count, 3_200)
        XCTAssertEqual(try stream.read(maxSamples: 3_200), [], "the writer pauses before it closes")
        XCTAssertTrue(stream.writerIdle)
        XCTAssertEqual(try stream.waitForWriter(upTo: nil), .audio, "the end comes")
        XCTAssertEqual(try stream.read(maxSamples: 3_200), [], "the end")
        XCTAssertFalse(stream.writerIdle)
        XCTAssertNil(stream.stop)

        // A writer that never sends again: waitForWriter ends at the idle bound.
        let stalled = try DescriptorAudioStream(StreamInput(descriptor: pipeSending([UInt8](repeating: 0, count: 6_400), piece: 6_400,
                                                                                    pause: .seconds(30)), idleSeconds: 0.6))
        stalled.parking = AudioStreamParking(after: .milliseconds(50), releaseAfter: .milliseconds(100), park: {}, resume: { true })
        XCTAssertEqual(try stalled.read(maxSamples: 3_200).count, 3_200)
        XCTAssertEqual(try stalled.read(maxSamples: 3_200), [])
        XCTAssertTrue(stalled.writerIdle)
        XCTAssertEqual(try stalled.waitForWriter(upTo: .milliseconds(100)), .silent, "no more than the patience")
        XCTAssertNil(stalled.stop)
        XCTAssertEqual(try stalled.waitForWriter(upTo: nil), .stopped)
        XCTAssertEqual(stalled.stop, .idle, "the idle bound, not the writer's next piece 30 s on")
    }

    func testATrickleGivesItsDecoderBackAsASilentWriterDoes() throws {
        // 10 ms of audio every 250 ms: never silent for the release time (0.4 s) at a stretch,
        // but it falls 0.4 s behind after about 0.4 s; a steady writer (all of it at once) never does.
        let trickle = try DescriptorAudioStream(StreamInput(descriptor: pipeSending([UInt8](repeating: 0, count: 320_000), piece: 320,
                                                                                    pause: .milliseconds(250)), idleSeconds: 30))
        trickle.parking = AudioStreamParking(after: .milliseconds(100), releaseAfter: .milliseconds(400), park: {}, resume: { true })
        var trickled = 0
        // 160 samples a piece: given back within a few pieces; read on no further than 10 s of them.
        while case let chunk = try trickle.read(maxSamples: 2048), !chunk.isEmpty || !trickle.writerIdle, trickled < 6_400 {
            trickled += chunk.count
        }
        XCTAssertTrue(trickle.writerIdle)
        XCTAssertLessThan(trickled, 2_000, "a trickle kept its decoder")
        XCTAssertNil(trickle.stop)

        let steady = try DescriptorAudioStream(StreamInput(descriptor: pipeSending([UInt8](repeating: 0, count: 64_000))))
        steady.parking = AudioStreamParking(after: .milliseconds(100), releaseAfter: .milliseconds(400), park: {}, resume: { true })
        var samples = 0
        while case let chunk = try steady.read(maxSamples: 2048), !chunk.isEmpty {
            samples += chunk.count
            XCTAssertFalse(steady.writerIdle)
            usleep(20_000)  // decoding: 0.128 s of audio in 20 ms
        }
        XCTAssertEqual(samples, 32_000)
        XCTAssertFalse(steady.writerIdle)
    }

    func testAStreamThatAlwaysHasAudioGivesItsDecoderBackAfterEachTurn() throws {
        // 4 s of audio, all in the pipe at once: no wait for the writer, only turns of 0.2 s.
        let fd = pipeSending([UInt8](repeating: 0, count: 128_000), piece: 65_536)
        let stream = try DescriptorAudioStream(StreamInput(descriptor: fd))
        let calls = Locked<[String]>([])
        stream.parking = AudioStreamParking(after: .seconds(5), turn: .milliseconds(200),
                                            park: { calls.withLock { $0.append("park") } },
                                            resume: { calls.withLock { $0.append("resume") }; return true })
        let started = ContinuousClock.now
        var samples = 0
        while case let chunk = try stream.read(maxSamples: 1_600), !chunk.isEmpty {
            samples += chunk.count
            usleep(20_000)  // decoding 0.1 s of audio takes this long, say
        }
        let took = ContinuousClock.now - started
        XCTAssertEqual(samples, 64_000)
        let turns = calls.withLock { $0 }
        XCTAssertEqual(turns.count % 2, 0)
        XCTAssertTrue(zip(turns, turns.dropFirst()).allSatisfy { $0 != $1 }, "park and resume alternate: \(turns)")
        // 40 reads of 20 ms: about 0.8 s, so about four turns given back (three at the least).
        XCTAssertGreaterThanOrEqual(turns.count / 2, 3, "\(turns.count / 2) turns in \(took)")
        XCTAssertLessThanOrEqual(Double(turns.count / 2), took / .milliseconds(200) + 1)
    }

    func testAnotherReaderOfThePipeCannotLeaveItStuck() throws {
        // The caller keeps reading its end of the pipe too: poll may say "readable" and the
        // bytes be gone by the read. Our description is non-blocking, so the read comes back.
        let fd = pipeSending([0, 0], keepOpen: true)
        let stream = try DescriptorAudioStream(StreamInput(descriptor: fd, idleSeconds: 0.5))
        var drained = [UInt8](repeating: 0, count: 2)
        XCTAssertEqual(read(fd, &drained, 2), 2, "the other reader takes the bytes first")
        XCTAssertEqual(try stream.read(maxSamples: 2048), [])
        XCTAssertEqual(stream.stop, .idle, "the idle bound ended it, not the writer's close 30 s on")
    }

    /// With a read-ahead limit, each read also takes in what the writer has already sent, without
    /// waiting, up to the limit: all of a fast writer's stream (its end seen), as far as the limit
    /// of a longer one, and of a live writer only what has come. Without one, a read takes what it
    /// asks for and at most one read's worth more.
    func testAReadTakesInWhatTheWriterHasSentUpToTheReadAheadLimit() throws {
        let audio = (0..<320_000).map { UInt8(truncatingIfNeeded: $0 / 2) }  // 10 s
        // All there already (a regular file: no wait for a writer, however loaded the machine).
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("read-ahead-\(getpid()).raw").path
        try Data(audio).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        let file = open(path, O_RDONLY | O_CLOEXEC)
        defer { close(file) }

        let whole = try DescriptorAudioStream(StreamInput(descriptor: file))
        whole.readAheadLimit = 1_000_000
        let first = try whole.read(maxSamples: 1_600)
        XCTAssertEqual(first.count, 1_600)
        XCTAssertEqual(whole.buffered, 158_400)
        XCTAssertTrue(whole.hasEnded)
        let rest = whole.takeBuffered()
        XCTAssertEqual(first + rest, audio.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }, "in order, nothing lost")
        XCTAssertEqual(try whole.read(maxSamples: 1_600), [])

        let limited = try DescriptorAudioStream(StreamInput(descriptor: file))
        limited.readAheadLimit = 50_000
        _ = try limited.read(maxSamples: 1_600)
        XCTAssertGreaterThanOrEqual(limited.buffered, 50_000 - 1_600)
        XCTAssertLessThan(limited.buffered, 158_400, "it stopped near its limit")
        XCTAssertFalse(limited.hasEnded)

        let unlimited = try DescriptorAudioStream(StreamInput(descriptor: file))
        _ = try unlimited.read(maxSamples: 1_600)
        XCTAssertLessThanOrEqual(unlimited.buffered, 32_768, "no read-ahead: one read's worth at most")

        // 20 ms every 20 ms: each read takes what it asks for and what has come, never waits for more.
        let live = try DescriptorAudioStream(StreamInput(descriptor: pipeSending(audio, piece: 640, pause: .milliseconds(20))))
        live.readAheadLimit = 1_000_000
        var taken = 0
        for _ in 0..<10 { taken += try live.read(maxSamples: 320).count }
        XCTAssertEqual(taken, 3_200)
        XCTAssertLessThan(live.buffered, 16_000, "a live writer was read ahead for \(live.buffered) samples")
        XCTAssertFalse(live.hasEnded)
    }
}
