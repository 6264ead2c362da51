import Foundation
import Glibc
import VoiceboxBus
import VoiceboxContract
import XCTest

/// What the end-to-end tests add to the shared recordings.
extension Recordings {
    /// Skips (not fails) when the model or the recordings are not installed.
    static func require() throws {
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/share/pocketsphinx/model/en-us/en-us.lm.bin"),
                          "pocketsphinx-en-us is not installed")
        try XCTSkipUnless(FileManager.default.fileExists(atPath: path("goforward.raw")), "pocketsphinx-testdata is not installed")
    }

    /// A headerless recording as a WAV file (paplay and sox want a header), in `directory`.
    static func wav(_ name: String, in directory: URL, effects: [String] = []) throws -> String {
        let target = directory.appendingPathComponent((name as NSString).deletingPathExtension + ".wav").path
        try sox(raw: path(name), to: target, effects: effects)
        return target
    }

    static func sox(raw: String, to target: String, output: [String] = [], effects: [String] = []) throws {
        let arguments = ["-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1", raw] + output + [target] + effects
        let result = try runProgram(["sox"] + arguments)
        guard result.status == 0 else { throw ProgramError(description: "sox \(arguments) failed: \(result.output)") }
    }
}

/// What Recognize answered.
struct Recognized {
    let text: String
    let details: [String: DBusValue]

    var id: UInt64 { details["id"]?.uint64 ?? 0 }
    var reason: String { details["reason"]?.string ?? "" }
    var duration: Double { details["duration"]?.double ?? -1 }
    var confidence: Double { details["confidence"]?.double ?? -1 }
    var language: String { details["language"]?.string ?? "" }
    var words: [(word: String, start: Double, end: Double)] {
        (details["words"]?.arrayElements ?? []).compactMap { element in
            guard case .structure(let fields) = element, fields.count == 3, let word = fields[0].string,
                  let start = fields[1].double, let end = fields[2].double else { return nil }
            return (word, start, end)
        }
    }
}

extension ServiceHarness {
    static let recognitionSignals: Set<String> = ["RecognitionStarted", "RecognitionPartial", "AudioLevel",
                                                  "RecognitionProgress", "RecognitionFinished"]

    func recognize(_ options: [String: DBusValue], timeout: Duration = .seconds(90)) async throws -> Recognized {
        try await Self.recognize(on: client, options, timeout: timeout)
    }

    /// goforward streamed as 32-bit floats at 48 kHz in stereo (made with sox in `directory`), so
    /// that the service unpacks and resamples it.
    func recognizeGoForwardAt48kHzInStereo(in directory: URL) async throws -> Recognized {
        let path = directory.appendingPathComponent("stereo.f32").path
        try Recordings.sox(raw: Recordings.path("goforward.raw"), to: path,
                           output: ["-t", "raw", "-e", "floating-point", "-b", "32", "-L"], effects: ["rate", "48000", "channels", "2"])
        let writer = try PipeWriter(try Array(Data(contentsOf: URL(fileURLWithPath: path))))
        defer { writer.closeReadEnd() }
        return try await recognize(["stream": .unixFD(writer.readEnd), "stream_format": .string("f32le"),
                                    "stream_rate": .uint32(48_000), "stream_channels": .uint32(2)])
    }

    static func recognize(on connection: BusConnection, _ options: [String: DBusValue],
                          timeout: Duration = .seconds(90)) async throws -> Recognized {
        let reply = try await connection.call(destination: name, path: path, interface: interface, member: "Recognize",
                                              arguments: [.vardict(options)], timeout: timeout)
        return Recognized(text: reply.first?.string ?? "", details: reply.dropFirst().first?.vardictEntries ?? [:])
    }

    /// `member` (EndRecognition, StopRecognition, CancelRecognition) from `connection`: another
    /// process, or the caller itself.
    static func call(_ member: String, _ arguments: [DBusValue] = [], on connection: BusConnection) async throws {
        _ = try await connection.call(destination: name, path: path, interface: interface, member: member,
                                      arguments: arguments, timeout: .seconds(10))
    }

    /// The error Recognize fails with, or nil if it succeeded.
    func recognitionError(_ options: [String: DBusValue]) async -> DBusError? {
        do {
            _ = try await recognize(options)
            return nil
        } catch let error as DBusError {
            return error
        } catch {
            return DBusError(name: "test.Unexpected", message: "\(error)")
        }
    }

    /// Recognition signals about `id`, in the order they came.
    func recognitionSignals(of id: UInt64) -> [Signal] {
        signals.filter { Self.recognitionSignals.contains($0.member) && $0.arguments.first?.uint64 == id }
    }

    /// Ids of every RecognitionStarted so far.
    var startedRecognitions: [UInt64] {
        signals.filter { $0.member == "RecognitionStarted" }.compactMap { $0.arguments.first?.uint64 }
    }

    /// Waits for a RecognitionStarted beyond the `known` ones; returns its id.
    func waitForNewRecognition(besides known: [UInt64], timeout: Duration = .seconds(20)) async throws -> UInt64 {
        try await waitUntil("RecognitionStarted", timeout: timeout) { self.startedRecognitions.count > known.count }
        return startedRecognitions.first { !known.contains($0) }!
    }

    /// Waits until microphone recognition `id` has taken about `seconds` of audio: AudioLevel comes
    /// at most 20 times a second (of the wall clock) while audio is taken, and the microphone
    /// delivers in real time, so that many times 20 of them mean at least that long listened.
    /// Apps are told to speak after the detector's 1.5 s warm-up; tests wait 2 s of it so (a third
    /// of a second's slack for a microphone that delivered late).
    func waitUntilHeard(_ id: UInt64, seconds: Double) async throws {
        let levels = Int((seconds * 20).rounded(.up))
        try await waitUntil("\(seconds) s of audio heard", timeout: .seconds(30)) {
            self.recognitionSignals(of: id).filter { $0.member == "AudioLevel" }.count >= levels
        }
    }

    func waitForListening(_ wanted: Bool, timeout: Duration = .seconds(10)) async throws {
        try await waitUntil("Listening to be \(wanted)", timeout: timeout) {
            (try? await self.property("Listening"))?.bool == wanted
        }
    }
}

struct ProgramError: Error, CustomStringConvertible { var description: String }

/// Runs a program that ends to its end, bounded by timeout(1); standard error is dropped.
@discardableResult
func runProgram(_ arguments: [String], seconds: Int = 120) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
    process.arguments = ["-s", "KILL", "\(seconds)"] + arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// The clients' recording streams (`pactl list short source-outputs`), one line each. The
/// stack's remapped fake microphone records its master itself (a source-output with no client,
/// "-"): that one is the server's own and is left out.
func sourceOutputs(server: String? = nil) throws -> [String] {
    let result = try runProgram(["pactl"] + (server.map { ["-s", $0] } ?? []) + ["list", "short", "source-outputs"], seconds: 10)
    guard result.status == 0 else { throw ProgramError(description: "pactl failed with \(result.status)") }
    return result.output.split(separator: "\n").map(String.init).filter { line in
        let columns = line.split(separator: "\t", omittingEmptySubsequences: false)
        return columns.count > 2 && columns[2] != "-"
    }
}

/// What the bare `pocketsphinx_continuous -infile` prints for a file, one line per utterance joined.
func pocketsphinxContinuous(_ file: String, _ extra: [String] = []) throws -> String {
    let result = try runProgram(["pocketsphinx_continuous", "-infile", file, "-logfn", "/dev/null"] + extra)
    guard result.status == 0 else { throw ProgramError(description: "pocketsphinx_continuous failed on \(file)") }
    return result.output.split(whereSeparator: \.isNewline).joined(separator: " ")
}

/// A fresh directory under /tmp, removed by the test case's teardown.
func makeTemporaryDirectory(_ testCase: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-e2e-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    testCase.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

/// Plays a file into a sink with paplay; `finished` says when playback has drained.
final class Player: Sendable {
    let process: Subprocess
    let startedAt = ContinuousClock.now

    init(_ file: String, sink: String) throws {
        // Role "test": the service spares it (ServiceHarness), as a real microphone is no stream at all.
        // Full volume set by the client, so that no level a test left in the server's stream memory
        // (module-stream-restore, pulse-stock) plays the speech softer.
        process = try Subprocess("/usr/bin/paplay", ["-d", sink, "--volume=65536", "--property=media.role=test", file])
    }

    func waitUntilDone(timeout: Duration = .seconds(30)) async {
        await process.wait(timeout: timeout)
    }

    func stop() { process.signal(SIGTERM) }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
