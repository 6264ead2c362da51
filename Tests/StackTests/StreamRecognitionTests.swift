import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxInterface
import VoiceboxLock
import XCTest

/// Recognize with `stream`: the caller's own audio through a pipe, into a real voiceboxd and the
/// real model, at any speed, in any format, stalled, cut short, cancelled, many at once.
final class StreamRecognitionTests: ServiceTestCase {
    override class var usesRecordings: Bool { true }
    private let expected = "go forward ten meters"

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
        // Ten minutes of audio, written as fast as the pipe takes it: the writer must wait for the
        // decoder (back-pressure), not hand everything over to a buffer in the service.
        let bytes = try [UInt8]((0..<215).map { _ in try Recordings.bytes() }.joined())
        // The model loaded first, so memory compares like with like.
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        let pid = service.daemon.pid
        let memoryBefore = residentBytes(pid) ?? 0
        let writer = try PipeWriter(bytes)
        let running = Task { try await service.recognize(["stream": .unixFD(writer.readEnd)]) }
        let id = try await service.waitForNewRecognition(besides: service.startedRecognitions)
        writer.closeReadEnd()
        try await Task.sleep(for: .seconds(3))
        let peak = residentBytes(pid) ?? 0
        let writerDone = await writer.result(timeout: .zero)
        XCTAssertNil(writerDone, "the writer finished 9.6 MB in 3 s: the service buffered it instead of pushing back")
        if !underSanitizer { XCTAssertLessThan(peak - memoryBefore, 32 << 20, "VmRSS grew by \((peak - memoryBefore) >> 20) MiB while streaming") }
        // EndRecognition from another process (a shortcut's second press): what was heard so far.
        let other = try BusConnection(address: stack.busAddress)
        try await ServiceHarness.call("EndRecognition", [.uint64(id), .boolean(false)], on: other)
        let heard = try await running.value
        XCTAssertEqual(heard.reason, "stopped")
        XCTAssertTrue(heard.text.hasPrefix("go forward ten meters"), heard.text)
        XCTAssertLessThan(heard.duration, 590)
        let writerSaw = await writer.result(timeout: .seconds(3))
        XCTAssertEqual(writerSaw, .brokenPipe, "the service let go of the pipe when the recognition ended")
        await other.close()
    }

    // MARK: Endings

    func testAStalledWriterEndsWithTimeoutAndHoldsUpNoOneElse() async throws {
        let (service, stack) = (self.service!, self.stack!)
        // The first 1.4 s ("go forward"), then nothing, the pipe kept open; as many such streams
        // as there are decoders, so that a stalled stream that kept its decoder would hold up all.
        let bytes = try Recordings.bytes()
        let stalled = try PipeWriter(Array(bytes[0..<44_800]), keepOpen: true)
        let extra = try (1..<ProcessInfo.processInfo.activeProcessorCount).map { _ in try PipeWriter(Array(bytes[0..<44_800]), keepOpen: true) }
        let started = ContinuousClock.now
        let waiting = Task {
            try await service.recognize(["stream": .unixFD(stalled.readEnd), "stream_idle_seconds": .double(8)])
        }
        var extraTasks: [Task<Recognized, any Error>] = []
        for writer in extra {
            let fd = writer.readEnd
            extraTasks.append(Task { try await service.recognize(["stream": .unixFD(fd), "stream_idle_seconds": .double(8)]) })
        }
        var known: [UInt64] = []
        for _ in 0..<(1 + extra.count) { known.append(try await service.waitForNewRecognition(besides: known)) }
        // Another caller meanwhile: answered at once, not after the stall.
        let other = try BusConnection(address: stack.busAddress)
        let otherStart = ContinuousClock.now
        let answered = try await ServiceHarness.recognize(on: other, ["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(answered.text, expected)
        // 0.25 s until the streams park, a model load (the parked streams keep the warm decoders),
        // the decode: well under the 8 s a decoder held by a stalled stream would cost.
        XCTAssertLessThan(ContinuousClock.now - otherStart, .seconds(faultBound(4.5)), "another caller waited for the stalled stream")
        let heard = try await waiting.value
        stalled.closeReadEnd()
        for (task, writer) in zip(extraTasks, extra) {
            let reason = try await task.value.reason
            XCTAssertEqual(reason, "timeout")
            writer.closeReadEnd()
        }
        XCTAssertEqual(heard.reason, "timeout")
        XCTAssertTrue(heard.text.hasPrefix("go"), "what was heard before the stall: '\(heard.text)'")
        let took = ContinuousClock.now - started
        XCTAssertGreaterThan(took, .seconds(8), "the idle bound is 8 s")
        // 4 s of slack: the model load and the other caller's file; 11.3 s was seen with a second
        // test session streaming on the same 2 cores.
        XCTAssertLessThan(took, .seconds(faultBound(12)), "the idle bound is 8 s")
        await other.close()
    }

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
        let before = await settledDescriptorCount(pid, atMost: 0, settle: .milliseconds(300)) ?? 0
        let opened = openDescriptors(pid)
        let known = service.startedRecognitions
        // A minute of audio, sent in real time: the writer is still sending when the cancel comes.
        let long = try [UInt8]((0..<20).map { _ in try Recordings.bytes() }.joined())
        let writer = try PipeWriter(long, piece: 640, pause: .milliseconds(20))
        let waiting = Task { () -> DBusError? in
            do {
                _ = try await service.recognize(["stream": .unixFD(writer.readEnd)])
                return nil
            } catch { return error as? DBusError }
        }
        _ = try await service.waitForNewRecognition(besides: known)
        writer.closeReadEnd()  // ours; the service holds its own
        try await Task.sleep(for: .seconds(1))
        try await service.proxy.call(Speech1.cancelRecognition)
        let error = await waiting.value
        XCTAssertEqual(error?.name, "org.voicebox.Error.Cancelled", error?.message ?? "it answered")
        // The service let go of the pipe: the writer's next write fails (EPIPE).
        let writerSaw = await writer.result(timeout: .seconds(3))
        XCTAssertEqual(writerSaw, .brokenPipe, "the writer kept writing into a pipe nobody reads")
        let after = await settledDescriptorCount(pid, atMost: before)
        XCTAssertEqual(after, before, "a descriptor stayed open: \(descriptorsAdded(opened, openDescriptors(pid)))")
    }

    // MARK: Many at once, and bad input

    func testTwentyStreamsFromFiveCallersAreServedFairlyInBoundedMemory() async throws {
        let (service, stack) = (self.service!, self.stack!)
        let pid = service.daemon.pid
        // The model loaded and warm first, so memory compares like with like.
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        let descriptorsBefore = await settledDescriptorCount(pid, atMost: 0, settle: .milliseconds(300)) ?? 0
        let openBefore = openDescriptors(pid)
        let memoryBefore = residentBytes(pid) ?? 0
        let callers = try (0..<5).map { _ in try BusConnection(address: stack.busAddress) }
        let bytes = try Recordings.bytes()
        var writers: [PipeWriter] = []
        var tasks: [(caller: Int, task: Task<Recognized, any Error>)] = []
        // Each caller queues its four at once, one caller after another.
        for (index, caller) in callers.enumerated() {
            for _ in 0..<4 {
                let writer = try PipeWriter(bytes)
                writers.append(writer)
                let fd = writer.readEnd
                tasks.append((index, Task { try await ServiceHarness.recognize(on: caller, ["stream": .unixFD(fd)]) }))
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        var results: [(caller: Int, heard: Recognized)] = []
        for (caller, task) in tasks { results.append((caller, try await task.value)) }
        for writer in writers { writer.closeReadEnd() }
        XCTAssertEqual(results.filter { $0.heard.text == expected }.count, 20, results.map(\.heard.text).description)
        // Round-robin by caller: once the first decoders are taken, the next turns go to the other callers.
        let order = service.startedRecognitions.compactMap { id in results.first { $0.heard.id == id }?.caller }
        XCTAssertEqual(order.count, 20)
        print("METRIC twenty streams of five callers started in caller order \(order)")
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let turns = Array(order.dropFirst(cores).prefix(4))
        // Under a sanitizer a stream's 1 s turn can end before all five callers have queued (their
        // admission alone takes that long), so the first queued caller rightly goes again.
        if !underSanitizer {
            XCTAssertEqual(Set(turns).count, 4, "the next four turns went to one caller's queue: \(order)")
        }
        // 10 s to settle: under load (CI's sanitizer run) a descriptor was seen open past 3 s and then
        // gone; a leak stays for good, and the message names what is open.
        let descriptorsAfter = await settledDescriptorCount(pid, atMost: descriptorsBefore, settle: .seconds(10))
        let openAfter = openDescriptors(pid)
        XCTAssertEqual(descriptorsAfter, descriptorsBefore, "descriptors not flat: \(descriptorsAdded(openBefore, openAfter))")
        let memoryAfter = await settledResidentBytes(pid, towards: memoryBefore)
        if !underSanitizer {
            XCTAssertLessThan(memoryAfter - memoryBefore, 16 << 20, "VmRSS grew by \((memoryAfter - memoryBefore) >> 20) MiB")
        }
        for caller in callers { await caller.close() }
    }

    /// As many streams as there are decoders, each always with audio (minutes of it, as fast as the
    /// pipe goes): another caller's file is answered after about one turn, not after the streams.
    func testStreamsThatAlwaysHaveAudioTakeTurnsWithAnotherCallersFile() async throws {
        let (service, stack) = (self.service!, self.stack!)
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        let bytes = try [UInt8]((0..<100).map { _ in try Recordings.bytes() }.joined())  // 279 s: ~28 s of decoding each
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let callers = try (0..<cores).map { _ in try BusConnection(address: stack.busAddress) }
        let writers = try callers.map { _ in try PipeWriter(bytes) }
        let warmUp = service.startedRecognitions  // before any stream can begin
        var streams: [Task<Recognized, any Error>] = []
        for (caller, writer) in zip(callers, writers) {
            let fd = writer.readEnd
            streams.append(Task { try await ServiceHarness.recognize(on: caller, ["stream": .unixFD(fd)]) })
        }
        var known = warmUp
        for _ in 0..<cores { known.append(try await service.waitForNewRecognition(besides: known)) }
        known.removeAll { warmUp.contains($0) }
        for writer in writers { writer.closeReadEnd() }
        try await Task.sleep(for: .seconds(1))
        let other = try BusConnection(address: stack.busAddress)
        let asked = ContinuousClock.now
        let answered = try await ServiceHarness.recognize(on: other, ["file": .string(Recordings.path("goforward.raw"))])
        let waited = ContinuousClock.now - asked
        print("METRIC another caller's file beside \(cores) steady streams: \(waited)")
        XCTAssertEqual(answered.text, expected)
        // A turn (1 s), a model load for a third decoder, the decode: before turns, the file waited
        // for a stream to end (28 s and more).
        XCTAssertLessThan(waited, .seconds(faultBound(6)), "the streams kept every decoder")
        for id in known {
            try await ServiceHarness.call("EndRecognition", [.uint64(id), .boolean(false)], on: other)
        }
        for stream in streams {
            let heard = try await stream.value
            XCTAssertEqual(heard.reason, "stopped", "a stream had ended before the file: the test proves nothing")
            XCTAssertLessThan(heard.duration, 270)
            XCTAssertTrue(heard.text.hasPrefix("go forward ten meters"), heard.text)
        }
        for caller in callers + [other] { await caller.close() }
    }

    /// `count` streams of `bytes` from each caller, a Recognize running for each; a task's value is
    /// the call's error (nil: it answered).
    private func startStreams(_ bytes: [UInt8], count: Int, on callers: [BusConnection], keepOpen: Bool = false,
                              options: [String: DBusValue] = [:]) throws -> (writers: [PipeWriter], calls: [Task<DBusError?, Never>]) {
        var writers: [PipeWriter] = []
        var calls: [Task<DBusError?, Never>] = []
        for caller in callers {
            for _ in 0..<count {
                let writer = try PipeWriter(bytes, keepOpen: keepOpen)
                writers.append(writer)
                let fd = writer.readEnd
                calls.append(Task {
                    do {
                        _ = try await ServiceHarness.recognize(on: caller, options.merging(["stream": .unixFD(fd)]) { $1 })
                        return nil
                    } catch { return error as? DBusError }
                })
            }
        }
        return (writers, calls)
    }

    /// Two streams of `bytes` from each caller (idle bound an hour; in real time if asked), a
    /// Recognize running for each; a task's value is what it heard.
    private func streamTwoEach(_ bytes: [UInt8], from callers: [BusConnection], options: [String: DBusValue],
                               realTime: Bool = false, keepOpen: Bool = false)
        throws -> (writers: [PipeWriter], streams: [Task<Recognized, any Error>]) {
        var writers: [PipeWriter] = []
        var streams: [Task<Recognized, any Error>] = []
        for caller in callers {
            for _ in 0..<2 {
                let writer = realTime ? try PipeWriter(bytes, piece: 3_200, pause: .milliseconds(100), keepOpen: keepOpen)
                    : try PipeWriter(bytes, keepOpen: keepOpen)
                writers.append(writer)
                let streamOptions = options.merging(["stream": .unixFD(writer.readEnd), "stream_idle_seconds": .double(3600)]) { $1 }
                streams.append(Task { try await ServiceHarness.recognize(on: caller, streamOptions) })
            }
        }
        return (writers, streams)
    }

    /// Another caller's stream of goforward.raw: the words must be right; returns how long it took.
    private func timeAStream(on other: BusConnection) async throws -> Duration {
        let speech = try PipeWriter(try Recordings.bytes())
        defer { speech.closeReadEnd() }
        let asked = ContinuousClock.now
        let streamed = try await ServiceHarness.recognize(on: other, ["stream": .unixFD(speech.readEnd)])
        XCTAssertEqual(streamed.text, expected)
        return ContinuousClock.now - asked
    }

    /// Cancels the callers' recognitions; each call must fail with Cancelled. Closes everything.
    private func cancel(_ started: (writers: [PipeWriter], calls: [Task<DBusError?, Never>]), of callers: [BusConnection],
                        closing others: [BusConnection]) async throws {
        for caller in callers { try await ServiceHarness.call("CancelRecognition", on: caller) }
        for call in started.calls {
            let error = await call.value
            XCTAssertEqual(error?.name, "org.voicebox.Error.Cancelled", error?.message ?? "it answered")
        }
        for writer in started.writers { writer.closeReadEnd() }
        for connection in callers + others { await connection.close() }
    }

    /// Silent streams (writers that send nothing, keeping the pipe open, idle bound an hour), six
    /// from one caller on one connection: each gives its decoder back once its writer has been
    /// silent for 2 s, so all of them begin, memory grows by at most the limit's decoders, and
    /// another caller's stream and file are answered meanwhile.
    func testSilentStreamsGiveTheirDecodersBackSoAnotherCallersStreamStarts() async throws {
        let (service, stack) = (self.service!, self.stack!)
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        let pid = service.daemon.pid
        let memoryBefore = residentBytes(pid) ?? 0
        let caller = try BusConnection(address: stack.busAddress)
        var known = service.startedRecognitions  // before any stream can begin
        let started = try startStreams([], count: 6, on: [caller], keepOpen: true, options: ["stream_idle_seconds": .double(3600)])
        var peak = 0
        for _ in 0..<6 {
            known.append(try await service.waitForNewRecognition(besides: known))
            peak = max(peak, (residentBytes(pid) ?? 0) - memoryBefore)
        }
        try await Task.sleep(for: .seconds(3))  // every one of them has released its decoder
        peak = max(peak, (residentBytes(pid) ?? 0) - memoryBefore)
        print("METRIC VmRSS with 6 silent streams of one caller, all begun: peak +\(peak >> 20) MiB")
        // A decoder is 70-95 MB resident; at most two of one caller's streams hold one at a time.
        if !underSanitizer { XCTAssertLessThan(peak, 450 << 20, "VmRSS grew by \(peak >> 20) MiB") }

        let other = try BusConnection(address: stack.busAddress)
        let streamWaited = try await timeAStream(on: other)
        print("METRIC another caller's stream beside 6 silent ones: \(streamWaited)")
        XCTAssertLessThan(streamWaited, .seconds(faultBound(4.5)), "the silent streams kept the stream decoders")
        let asked = ContinuousClock.now
        let answered = try await ServiceHarness.recognize(on: other, ["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(answered.text, expected)
        XCTAssertLessThan(ContinuousClock.now - asked, .seconds(faultBound(4.5)), "the silent streams held up another caller")
        try await cancel(started, of: [caller], closing: [other])
    }

    /// 64 silent streams (the queue's limit for parked streams), 16 from each of four
    /// connections of this one process, writers open and sending nothing: another caller's
    /// stream is still admitted and answered (the red team once got Busy here for an hour).
    func testParkedStreamsOfManyConnectionsNeverRefuseAnotherCallersStream() async throws {
        let (service, stack) = (self.service!, self.stack!)
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        let callers = try (0..<4).map { _ in try BusConnection(address: stack.busAddress) }
        var writeEnds: [Int32] = []
        var calls: [Task<DBusError?, Never>] = []
        var known = service.startedRecognitions
        for caller in callers {
            for _ in 0..<16 {
                var ends: [Int32] = [-1, -1]
                XCTAssertEqual(pipe(&ends), 0)
                writeEnds.append(ends[1])
                let readEnd = ends[0]
                calls.append(Task {
                    defer { close(readEnd) }
                    do {
                        _ = try await ServiceHarness.recognize(on: caller, ["stream": .unixFD(readEnd),
                                                                            "stream_idle_seconds": .double(3600)],
                                                               timeout: .seconds(300))
                        return nil
                    } catch { return error as? DBusError }
                })
            }
        }
        for _ in 0..<64 { known.append(try await service.waitForNewRecognition(besides: known, timeout: .seconds(60))) }
        try await Task.sleep(for: .seconds(3))  // every one of them parked, its decoder given back

        let other = try BusConnection(address: stack.busAddress)
        let waited = try await timeAStream(on: other)
        print("METRIC another caller's stream beside 64 parked streams of 4 connections: \(waited)")
        XCTAssertLessThan(waited, .seconds(faultBound(6)))
        for caller in callers { try await ServiceHarness.call("CancelRecognition", on: caller) }
        for call in calls {
            let error = await call.value
            XCTAssertEqual(error?.name, "org.voicebox.Error.Cancelled", error?.message ?? "it answered")
        }
        for end in writeEnds { close(end) }
        for connection in callers + [other] { await connection.close() }
    }

    /// Four streams of one caller that always have audio: two hold a decoder (a caller's share),
    /// the others wait, and another caller's stream starts at once.
    func testOneCallersSteadyStreamsLeaveADecoderForAnotherCaller() async throws {
        let (service, stack) = (self.service!, self.stack!)
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        let bytes = try [UInt8]((0..<100).map { _ in try Recordings.bytes() }.joined())  // 279 s each
        let caller = try BusConnection(address: stack.busAddress)
        var known = service.startedRecognitions
        let started = try startStreams(bytes, count: 4, on: [caller])
        for _ in 0..<2 { known.append(try await service.waitForNewRecognition(besides: known)) }
        try await Task.sleep(for: .seconds(2))
        XCTAssertEqual(service.startedRecognitions.count, known.count, "a third stream of one caller began")

        let other = try BusConnection(address: stack.busAddress)
        let waited = try await timeAStream(on: other)
        print("METRIC another caller's stream beside one caller's 4 steady streams: \(waited)")
        // A turn (1 s), a model load for the new decoder, the decode.
        XCTAssertLessThan(waited, .seconds(faultBound(6)), "one caller's streams kept every stream decoder")
        try await cancel(started, of: [caller], closing: [other])
    }

    /// Two callers' steady streams hold all four stream decoders: one of them gives its decoder
    /// to a third caller's stream at its next pause (after a turn's worth of holding it).
    func testStreamsOfTwoCallersYieldADecoderToAThirdCallersStream() async throws {
        let (service, stack) = (self.service!, self.stack!)
        let speed = try await service.decodingSpeed()
        let bytes = try [UInt8]((0..<100).map { _ in try Recordings.bytes() }.joined())  // 279 s each
        let callers = try (0..<2).map { _ in try BusConnection(address: stack.busAddress) }
        var known = service.startedRecognitions
        let started = try startStreams(bytes, count: 2, on: callers, options: ["stream_idle_seconds": .double(3600)])
        for _ in 0..<4 { known.append(try await service.waitForNewRecognition(besides: known)) }
        try await Task.sleep(for: .seconds(1))

        let other = try BusConnection(address: stack.busAddress)
        let waited = try await timeAStream(on: other)
        print("METRIC another caller's stream beside two callers' 4 steady streams: \(waited) (decoding at \(speed.text))")
        // The next pause of a stream (goforward: every 2.8 s), a turn, the decode.
        XCTAssertLessThan(waited, .seconds(speed.bound(8)), "two callers' streams kept every stream decoder")
        try await cancel(started, of: callers, closing: [other])
    }

    /// Listening for the end of speech (silence_seconds 10), streams of two callers hear speech
    /// with short pauses and no end: one gives its decoder to a third caller's stream in a pause,
    /// keeping what it heard.
    func testListeningStreamsOfTwoCallersYieldADecoderInAPause() async throws {
        let (service, stack) = (self.service!, self.stack!)
        let speed = try await service.decodingSpeed()
        let bytes = try [UInt8]((0..<100).map { _ in try Recordings.bytes() }.joined())  // 279 s, a pause every 2.8 s
        let callers = try (0..<2).map { _ in try BusConnection(address: stack.busAddress) }
        var known = service.startedRecognitions
        let (writers, streams) = try streamTwoEach(bytes, from: callers, options: ["silence_seconds": .double(10)])
        for _ in 0..<4 { known.append(try await service.waitForNewRecognition(besides: known)) }
        try await Task.sleep(for: .seconds(2))

        let other = try BusConnection(address: stack.busAddress)
        let waited = try await timeAStream(on: other)
        print("METRIC another caller's stream beside two callers' 4 listening streams of speech: \(waited) (decoding at \(speed.text))")
        XCTAssertLessThan(waited, .seconds(speed.bound(8)), "listening streams kept every stream decoder")
        // A listening stream of the third caller, itself asked to yield while the others wait:
        // not a word lost (the red team once got "" here, speech hidden in a fresh decoder's warm-up).
        let quiet = [UInt8](repeating: 0, count: 16_000)
        let phrase = try PipeWriter(quiet + (try Recordings.bytes()) + quiet + quiet + quiet + quiet + quiet + quiet,
                                    piece: 3_200, pause: .milliseconds(100))  // in real time
        let listened = try await ServiceHarness.recognize(on: other, ["stream": .unixFD(phrase.readEnd), "silence_seconds": .double(2)])
        phrase.closeReadEnd()
        XCTAssertEqual(listened.text, expected)
        XCTAssertEqual(listened.reason, "endpoint")
        for caller in callers { try await ServiceHarness.call("StopRecognition", on: caller) }
        for stream in streams {
            let heard = try await stream.value
            XCTAssertEqual(heard.reason, "stopped")
            XCTAssertTrue(heard.text.hasPrefix("go forward ten meters go forward"), heard.text)
        }
        for writer in writers { writer.closeReadEnd() }
        for connection in callers + [other] { await connection.close() }
    }

    /// Listening for the end of speech, four streams of two callers hear speech and then their
    /// writers send nothing (idle bound an hour): wanted by a third caller's stream, their
    /// silence ends their utterances as silence would, with what they heard.
    func testSpeechThenASilentWriterEndsItsUtteranceWhenAnotherStreamWaits() async throws {
        let (service, stack) = (self.service!, self.stack!)
        _ = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        let quiet = [UInt8](repeating: 0, count: 48_000)  // 1.5 s, the detector's warm-up
        let speech = Array(try Recordings.bytes().prefix(32_000 * 2))  // the first 2 s: "go forward ten"
        let callers = try (0..<2).map { _ in try BusConnection(address: stack.busAddress) }
        var known = service.startedRecognitions
        let (writers, streams) = try streamTwoEach(quiet + speech, from: callers, options: ["silence_seconds": .double(1)],
                                                   keepOpen: true)
        for _ in 0..<4 { known.append(try await service.waitForNewRecognition(besides: known)) }
        try await Task.sleep(for: .seconds(3))

        let other = try BusConnection(address: stack.busAddress)
        let waited = try await timeAStream(on: other)
        print("METRIC another caller's stream beside 4 stalled listening streams: \(waited)")
        XCTAssertLessThan(waited, .seconds(faultBound(6)), "stalled streams kept every stream decoder")
        for caller in callers { try await ServiceHarness.call("StopRecognition", on: caller) }
        var ended = 0
        for stream in streams {
            let heard = try await stream.value
            if heard.reason == "endpoint" {
                ended += 1
                XCTAssertTrue(heard.text.hasPrefix("go forward"), heard.text)
            }
        }
        XCTAssertGreaterThan(ended, 0, "none gave its decoder up")
        for writer in writers { writer.closeReadEnd() }
        for connection in callers + [other] { await connection.close() }
    }

    /// Unbroken speech: goforward's 2 s of speech over and over, no pause, in real time.
    private func babble(seconds: Int) throws -> [UInt8] {
        let speech = Array(try Recordings.bytes()[14_400..<78_400])  // 0.45-2.45 s: "go forward ten meters"
        return [UInt8]((0..<seconds / 2).map { _ in speech }.joined())
    }

    /// Four streams of two callers hear unbroken speech in real time (no pause for 30 s, so none
    /// comes to yield at): asked for a while with no pause, the longest holder cuts its utterance
    /// and gives its decoder to a third caller's stream; what each heard is kept.
    func testStreamsOfUnbrokenSpeechCutAnUtteranceForAThirdCallersStream() async throws {
        try await timeAStreamBesideBabble(options: [:], label: "streams")
    }

    /// The same, listening for the end of speech (silence_seconds), which never comes.
    func testListeningStreamsOfUnbrokenSpeechCutAnUtteranceForAThirdCallersStream() async throws {
        try await timeAStreamBesideBabble(options: ["silence_seconds": .double(10)], label: "listening streams")
    }

    /// A third caller's stream given a decoder by a cut keeps it while another caller holds two:
    /// the stream that was cut, waiting again, does not take it back at the first pause (CI,
    /// 2026-12-05: the two handed one decoder back and forth, and the third caller's stream waited
    /// for a second cut, 2 s more at least). Its speech comes in real time with pauses, so it
    /// holds the decoder past the minimum hold however fast the machine decodes.
    func testAStreamGivenADecoderByACutKeepsItWhileAnotherCallerHoldsTwo() async throws {
        let (service, stack) = (self.service!, self.stack!)
        let callers = try (0..<2).map { _ in try BusConnection(address: stack.busAddress) }
        var known = service.startedRecognitions
        let (writers, streams) = try streamTwoEach(try babble(seconds: 120), from: callers,
                                                   options: ["silence_seconds": .double(10)], realTime: true)
        for _ in 0..<4 { known.append(try await service.waitForNewRecognition(besides: known)) }
        try await Task.sleep(for: .seconds(6))  // every holder past its minimum hold in speech (5 s)

        let other = try BusConnection(address: stack.busAddress)
        let twice = try Recordings.bytes() + Recordings.bytes()  // 5.6 s, a 0.8 s pause between
        let speech = try PipeWriter(twice, piece: 3_200, pause: .milliseconds(100))
        defer { speech.closeReadEnd() }
        let asked = ContinuousClock.now
        let streamed = try await ServiceHarness.recognize(on: other, ["stream": .unixFD(speech.readEnd)])
        let waited = seconds(ContinuousClock.now - asked)
        print(String(format: "METRIC a stream of 5.6 s in real time, given a decoder by a cut: answered after %.2f s", waited))
        XCTAssertEqual(streamed.text, expected + " " + expected)
        // Asked, 2 s for a pause that does not come, the cut, a model load, 5.6 s of speech as it
        // comes, the last utterance's decode (8.1-8.2 s measured here). A second cut adds 2 s and a load
        // at least (12.1-12.8 s measured before the fix).
        XCTAssertLessThan(waited, faultBound(2 + 5.6 + 2.5), "the stream was asked for its decoder back")
        for caller in callers { try await ServiceHarness.call("CancelRecognition", on: caller) }
        for stream in streams { _ = try? await stream.value }
        for writer in writers { writer.closeReadEnd() }
        for connection in callers + [other] { await connection.close() }
    }

    private func timeAStreamBesideBabble(options: [String: DBusValue], label: String) async throws {
        let (service, stack) = (self.service!, self.stack!)
        let speed = try await service.decodingSpeed()
        let bytes = try babble(seconds: 120)
        let callers = try (0..<2).map { _ in try BusConnection(address: stack.busAddress) }
        var known = service.startedRecognitions
        let (writers, streams) = try streamTwoEach(bytes, from: callers, options: options, realTime: true)
        for _ in 0..<4 { known.append(try await service.waitForNewRecognition(besides: known)) }
        try await Task.sleep(for: .seconds(6))  // every holder past its minimum hold in speech (5 s)

        let other = try BusConnection(address: stack.busAddress)
        let waited = try await timeAStream(on: other)
        print("METRIC another caller's stream beside two callers' 4 \(label) of unbroken speech: \(waited) "
              + "(decoding at \(speed.text))")
        // Asked, 2 s for a pause that does not come, the cut, a model load, the decode.
        XCTAssertLessThan(waited, .seconds(speed.bound(8)), "streams of unbroken speech kept every stream decoder")
        for caller in callers { try await ServiceHarness.call("StopRecognition", on: caller) }
        for stream in streams {
            let heard = try await stream.value
            XCTAssertEqual(heard.reason, "stopped")
            XCTAssertTrue(heard.text.hasPrefix("go forward ten meters"), heard.text)
            XCTAssertGreaterThan(heard.text.components(separatedBy: "forward").count, 3, "words lost: \(heard.text)")
        }
        for writer in writers { writer.closeReadEnd() }
        for connection in callers + [other] { await connection.close() }
    }

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
