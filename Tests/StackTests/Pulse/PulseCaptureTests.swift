@testable import TestSupport
import Foundation
import VoiceboxContract
import VoiceboxCore
import VoiceboxPulse
import XCTest

/// Against the shared server of the test script: PULSE_SERVER, a 16 kHz mono null sink
/// (VOICEBOX_TEST_MIC_SINK) whose monitor is remapped as the default source (VOICEBOX_TEST_SOURCE).
final class PulseCaptureTests: XCTestCase {
    private let speech = "/usr/share/pocketsphinx/test/data/goforward.raw"

    func testRecordsSpeechPlayedIntoTheFakeMicrophone() async throws {
        let (micSink, _) = try sharedServerEnvironment()
        let started = ContinuousClock.now
        let capture = try await PulseCapture(mediaName: "test speech").openStream(source: nil)
        let opened = ContinuousClock.now
        let recorder = await ChunkRecorder.start(capture.chunks)
        let gotFirst = await waitUntil(.seconds(10)) { await recorder.count > 0 }
        XCTAssertTrue(gotFirst, "no audio within 10 s")
        let firstArrival = await recorder.chunks.first?.arrival ?? .now
        _ = await waitUntil(.seconds(10)) { await recorder.samples.count >= 8_000 }  // half a second of silence
        let silenceCount = await recorder.count

        // At full volume set by the client: on pulse-stock, module-stream-restore otherwise starts
        // paplay at the last level a test's "user" gave a paplay stream (CI, 2026-12-05:
        // AudioSessionTests' 30000, so -20 dB here, speech RMS 84 instead of 875).
        let play = try runCommand(["paplay", "--raw", "--format=s16le", "--rate=16000", "--channels=1", "--volume=65536",
                                   "-d", micSink, speech], seconds: 15)
        XCTAssertEqual(play.status, 0, "paplay failed")
        // Until the 2.8 s and 0.3 s more have come through (a slow reader, as under ThreadSanitizer
        // on a busy machine, may be behind when paplay ends; close() drops what is not yet read).
        _ = await waitUntil(.seconds(10)) {
            await recorder.chunks.dropFirst(silenceCount).reduce(0) { $0 + $1.samples.count } > 16_000 * 31 / 10
        }
        await capture.close()

        let chunks = await recorder.chunks
        let silence = chunks[..<silenceCount].flatMap(\.samples)
        let speech = chunks[silenceCount...].flatMap(\.samples)
        let silenceRMS = rms(silence), speechRMS = rms(speech)
        print("METRIC open: \(opened - started), first chunk after open: \(firstArrival - opened), "
              + "silence RMS \(silenceRMS) over \(silence.count) samples, speech RMS \(speechRMS) over \(speech.count) samples")
        let sizes = chunks.map { Double($0.samples.count) / 16 }
        print("METRIC chunk ms while playing: min \(sizes.min() ?? 0) max \(sizes.max() ?? 0)")
        for size in sizes { XCTAssert((10...60).contains(size), "chunk of \(size) ms") }
        XCTAssertGreaterThan(speech.count, 16_000 * 27 / 10, "the 2.8 s of speech were not all recorded")
        XCTAssertGreaterThan(speechRMS, 200)
        XCTAssertGreaterThan(speechRMS, 10 * silenceRMS + 1)
    }

    func testChunksAreTwentyToFiftyMilliseconds() async throws {
        _ = try sharedServerEnvironment()
        let capture = try await PulseCapture(mediaName: "test chunks").openStream(source: nil)
        let recorder = await ChunkRecorder.start(capture.chunks)
        let enough = await waitUntil(.seconds(15)) { await recorder.count >= 50 }  // 1-2.5 s of audio: a give-up
        await capture.close()
        XCTAssertTrue(enough, "fewer than 50 chunks in 15 s")
        let chunks = await recorder.chunks
        let milliseconds = chunks.map { Double($0.samples.count) / 16 }
        let gaps = zip(chunks.dropFirst(), chunks).map { ($0.arrival - $1.arrival) / .milliseconds(1) }
        print("METRIC chunk ms: min \(milliseconds.min()!) max \(milliseconds.max()!) "
              + "mean \(milliseconds.reduce(0, +) / Double(milliseconds.count)); "
              + "arrival gaps ms: max \(gaps.max() ?? 0) mean \(gaps.reduce(0, +) / Double(max(gaps.count, 1)))")
        for size in milliseconds { XCTAssert((10...60).contains(size), "chunk of \(size) ms") }
    }

    /// close() returns once the server no longer lists the recording (the microphone is free then).
    func testCloseReturnsOnceTheServerDroppedTheMicrophone() async throws {
        _ = try sharedServerEnvironment()
        let capture = try await PulseCapture(mediaName: "test release").openStream(source: nil)
        let recorder = await ChunkRecorder.start(capture.chunks)
        _ = await waitUntil(.seconds(10)) { await recorder.count > 0 }
        XCTAssertTrue(try sourceOutputIndices().contains(capture.serverIndex), "our source-output is not listed")
        let details = try runCommand(["pactl", "list", "source-outputs"], seconds: 10).output
        let ours = details.components(separatedBy: "Source Output #").first { $0.hasPrefix("\(capture.serverIndex)\n") } ?? ""
        XCTAssertTrue(ours.contains("application.name = \"Voicebox\""), ours)
        XCTAssertTrue(ours.contains("media.role = \"a11y\""), ours)
        XCTAssertTrue(ours.contains("media.name = \"test release\""), ours)

        let start = ContinuousClock.now
        await capture.close()
        let closed = ContinuousClock.now
        let goneRightAway = try !sourceOutputIndices().contains(capture.serverIndex)
        print("METRIC close() took \(closed - start); gone at first look after close: \(goneRightAway)")
        XCTAssertTrue(goneRightAway, "close() returned before the server dropped the source-output")
        let finished = await waitUntil(.seconds(10)) { await recorder.finished }
        XCTAssertTrue(finished, "chunks did not finish after close")
        let failure = await capture.failure
        XCTAssertNil(failure)
        await capture.close()  // idempotent
    }

    func testDroppedStreamReleasesTheMicrophoneToo() async throws {
        _ = try sharedServerEnvironment()
        var capture: PulseCaptureStream? = try await PulseCapture(mediaName: "test drop").openStream(source: nil)
        let index = capture!.serverIndex
        XCTAssertTrue(try sourceOutputIndices().contains(index))
        capture = nil
        let gone = try await waitUntil(.seconds(10)) { try !sourceOutputIndices().contains(index) }
        XCTAssertTrue(gone, "a stream dropped without close() kept the microphone")
    }

    func testNamedSourceRecords() async throws {
        let (_, source) = try sharedServerEnvironment()
        let capture = try await PulseCapture(mediaName: "test named").open(source: source)
        let recorder = await ChunkRecorder.start(capture.chunks)
        let got = await waitUntil(.seconds(10)) { await recorder.count > 0 }
        await capture.close()
        XCTAssertTrue(got)
    }

    func testUnknownSourceIsNoMicrophone() async throws {
        _ = try sharedServerEnvironment()
        do {
            _ = try await PulseCapture().open(source: "voicebox_no_such_source")
            XCTFail("opened a source that does not exist")
        } catch let error as CaptureError {
            guard case .noMicrophone(let reason) = error else { return XCTFail("\(error)") }
            print("METRIC noMicrophone reason: \(reason)")
        }
    }

    func testMissingServerIsServerUnavailable() async throws {
        do {
            _ = try await PulseCapture(server: "unix:/tmp/voicebox-no-such-dir/native").open(source: nil)
            XCTFail("opened a capture on a server that does not exist")
        } catch let error as CaptureError {
            guard case .serverUnavailable = error else { return XCTFail("\(error)") }
        }
    }
}

/// What a recording leaves behind once it is over: nothing (no thread, no descriptor).
final class CaptureCleanupTests: XCTestCase {
    private func count(_ directory: String) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: directory).count) ?? -1
    }

    /// The mainloop threads our captures start (named "voicebox-mic"). Counting every
    /// thread of the test process would also count dispatch's pool, which grows as it likes.
    private func mainloopThreads() -> Int {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.filter { task in
            (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?.hasPrefix("voicebox-mic") == true
        }.count
    }

    func testCancellingTheReaderReleasesTheMicrophone() async throws {
        _ = try sharedServerEnvironment()
        let capture = try await PulseCapture(mediaName: "test cancel").openStream(source: nil)
        let reader = Task { for await _ in capture.chunks {} }
        XCTAssertTrue(try sourceOutputIndices().contains(capture.serverIndex))
        reader.cancel()
        let gone = try await waitUntil(.seconds(10)) { try !sourceOutputIndices().contains(capture.serverIndex) }
        XCTAssertTrue(gone, "the microphone stayed open after the reader was cancelled")
    }

    func testRepeatedCapturesLeaveNoThreadsOrDescriptors() async throws {
        _ = try sharedServerEnvironment()
        // One round first, so lazily created process-wide things (dispatch threads) exist.
        try await openAndClose(times: 1)
        try await Task.sleep(for: .milliseconds(300))
        let threads = mainloopThreads(), descriptors = count("/proc/self/fd")
        try await openAndClose(times: 10)
        // Each capture's mainloop thread is joined on its queue just after close() returns.
        let settled = await waitUntil(.seconds(10)) {
            self.mainloopThreads() <= threads && self.count("/proc/self/fd") <= descriptors
        }
        print("METRIC mainloop threads \(threads) -> \(mainloopThreads()), descriptors \(descriptors) -> \(count("/proc/self/fd"))")
        XCTAssertTrue(settled, "threads or descriptors leaked")
    }

    private func openAndClose(times: Int) async throws {
        for _ in 0..<times {
            let capture = try await PulseCapture(mediaName: "test cleanup").open(source: nil)
            var chunks = capture.chunks.makeAsyncIterator()
            _ = await chunks.next()
            let names = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap {
                try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8) }
            XCTAssertGreaterThan(mainloopThreads(), 0, "an open capture runs a mainloop thread: the count must see it \(names)")
            await capture.close()
        }
    }
}
