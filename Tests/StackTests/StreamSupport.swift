import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import XCTest

/// What the stream test classes share: writers for many callers' streams, and how they end.
/// Every assertion is of order and outcome (who was answered while whose streams still ran, which
/// words were heard, how each ended): the bounds a class is about are made small in its
/// voiceboxd (`serviceArguments`), and the standard values' speed is bench/recognition's.
enum Streams {
    static let expected = "go forward ten meters"

    /// `count` streams of `bytes` from each caller, a Recognize running for each; a task's value is
    /// the call's error (nil: it answered).
    static func start(_ bytes: [UInt8], count: Int, on callers: [BusConnection], keepOpen: Bool = false,
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
    static func twoEach(_ bytes: [UInt8], from callers: [BusConnection], options: [String: DBusValue],
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
                streams.append(Task { try await ServiceHarness.recognize(on: caller, streamOptions, timeout: .seconds(300)) })
            }
        }
        return (writers, streams)
    }

    /// Another caller's stream of goforward.raw, which must be answered with its words while
    /// `service`'s recognitions `running` all still run (none has sent RecognitionFinished): they
    /// hold up no one. Gives up after a minute (a failure to be answered at all).
    static func answeredBeside(_ running: [UInt64], of service: ServiceHarness, on other: BusConnection,
                               options: [String: DBusValue] = [:], file: StaticString = #filePath, line: UInt = #line) async throws {
        let speech = try PipeWriter(try Recordings.bytes())
        defer { speech.closeReadEnd() }
        let streamed = try await ServiceHarness.recognize(on: other, options.merging(["stream": .unixFD(speech.readEnd)]) { $1 },
                                                          timeout: .seconds(300))
        XCTAssertEqual(streamed.text, expected, file: file, line: line)
        assertStillRunning(running, of: service, file: file, line: line)
    }

    /// None of `ids` has finished yet: what was answered meanwhile was answered beside them.
    static func assertStillRunning(_ ids: [UInt64], of service: ServiceHarness, file: StaticString = #filePath, line: UInt = #line) {
        let finished = ids.filter { id in service.recognitionSignals(of: id).contains { $0.member == "RecognitionFinished" } }
        XCTAssertEqual(finished, [], "these had ended before the other caller was answered: the test proves nothing",
                       file: file, line: line)
    }

    /// Cancels the callers' recognitions; each call must fail with Cancelled. Closes everything.
    static func cancel(_ started: (writers: [PipeWriter], calls: [Task<DBusError?, Never>]), of callers: [BusConnection],
                       closing others: [BusConnection]) async throws {
        for caller in callers { try await ServiceHarness.call("CancelRecognition", on: caller) }
        for call in started.calls {
            let error = await call.value
            XCTAssertEqual(error?.name, "org.voicebox.Error.Cancelled", error?.message ?? "it answered")
        }
        for writer in started.writers { writer.closeReadEnd() }
        for connection in callers + others { await connection.close() }
    }

    /// Unbroken speech: goforward's 2 s of speech over and over, no pause.
    static func babble(seconds: Int) throws -> [UInt8] {
        let speech = Array(try Recordings.bytes()[14_400..<78_400])  // 0.45-2.45 s: "go forward ten meters"
        return [UInt8]((0..<seconds / 2).map { _ in speech }.joined())
    }

    /// goforward `times` over: 2.8 s each, a pause in each.
    static func goforward(times: Int) throws -> [UInt8] {
        let once = try Recordings.bytes()
        return [UInt8]((0..<times).map { _ in once }.joined())
    }
}

extension ServiceHarness {
    /// Waits for `count` new RecognitionStarted beyond `known`; returns them, in order.
    func waitForNewRecognitions(_ count: Int, besides known: [UInt64], timeout: Duration = .seconds(120)) async throws -> [UInt64] {
        var seen = known
        for _ in 0..<count { seen.append(try await waitForNewRecognition(besides: seen, timeout: timeout)) }
        return Array(seen.dropFirst(known.count))
    }
}

/// A class of recognition tests that share one voiceboxd (`sharesService`) and decode
/// recordings. A test that fails half-way leaves nothing running for the next: what it started
/// and did not see end is cancelled after it.
class SharedRecognitionTestCase: ServiceTestCase {
    override class var usesRecordings: Bool { true }
    override class var sharesService: Bool { true }

    override func tearDown() async throws {
        if let service {
            let unfinished = service.startedRecognitions.filter { id in
                !service.recognitionSignals(of: id).contains { $0.member == "RecognitionFinished" }
            }
            for id in unfinished { _ = try? await service.call("EndRecognition", [.uint64(id), .boolean(true)]) }
        }
        try await super.tearDown()
    }
}
