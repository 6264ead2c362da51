@testable import TestSupport
import Foundation
import XCTest

/// Helpers for tests against a real PulseAudio. Every wait is bounded.

/// The shared server the test script started; tests that need it skip without it.
func sharedServerEnvironment() throws -> (micSink: String, source: String) {
    let env = ProcessInfo.processInfo.environment
    guard env["PULSE_SERVER"] != nil else { throw XCTSkip("PULSE_SERVER is not set: no PulseAudio to test against") }
    return (env["VOICEBOX_TEST_MIC_SINK"] ?? "voicebox_mic", env["VOICEBOX_TEST_SOURCE"] ?? "voicebox_mic_source")
}

struct CommandResult {
    var status: Int32
    var output: String
}

/// Runs a command to its end; `timeout(1)` bounds it, so a hung server cannot hang the test.
/// Only for commands that end: Foundation's `Process` notices a child's exit by a descriptor
/// the child inherits, and PulseAudio closes every inherited descriptor at start-up, after
/// which `waitUntilExit` blocks in `waitpid` until it really exits. So a server is started
/// with `--daemonize=yes` (this returns once it is ready) and without capturing its output
/// (the daemon would hold the pipe open).
@discardableResult
func runCommand(_ arguments: [String], seconds: Int = 10, environment: [String: String] = [:],
                captureOutput: Bool = true) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
    process.arguments = ["\(seconds)"] + arguments
    process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let pipe = Pipe()
    process.standardOutput = captureOutput ? pipe : FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = captureOutput ? pipe.fileHandleForReading.readDataToEndOfFile() : Data()
    process.waitUntilExit()
    return CommandResult(status: process.terminationStatus, output: String(decoding: data, as: UTF8.self))
}

/// Indices of the server's source-outputs (recording streams), as `pactl` sees them.
func sourceOutputIndices(server: String? = nil) throws -> Set<UInt32> {
    let result = try runCommand(["pactl"] + (server.map { ["-s", $0] } ?? []) + ["list", "short", "source-outputs"], seconds: 10)
    guard result.status == 0 else { throw CommandError(description: "pactl failed with \(result.status)") }
    return Set(result.output.split(separator: "\n").compactMap { line in
        line.split(separator: "\t").first.flatMap { UInt32($0) }
    })
}

struct CommandError: Error, CustomStringConvertible { var description: String }

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held.
func waitUntil(_ timeout: Duration, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}

/// `body`'s outcome, or nil if it has not returned after `timeout`: a give-up for a call that must
/// not wait for a bound (set long by the test), not a measure of its speed.
func outcome<T: Sendable>(within timeout: Duration, _ body: @escaping @Sendable () async throws -> T) async -> Result<T, any Error>? {
    let result = Shared<Result<T, any Error>?>(nil)
    let task = Task {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        result.withLock { $0 = outcome }
    }
    _ = await waitUntil(timeout) { result.value != nil }
    if result.value == nil { task.cancel() }
    return result.value
}

func rms(_ samples: some Collection<Int16>) -> Double {
    guard !samples.isEmpty else { return 0 }
    let sum = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
    return (sum / Double(samples.count)).squareRoot()
}

/// Reads a chunk stream in the background and keeps every chunk with its arrival time.
actor ChunkRecorder {
    struct Chunk: Sendable {
        var samples: [Int16]
        var arrival: ContinuousClock.Instant
    }

    private(set) var chunks: [Chunk] = []
    private(set) var finished = false
    private var reader: Task<Void, Never>?

    init() {}

    static func start(_ stream: AsyncStream<[Int16]>) async -> ChunkRecorder {
        let recorder = ChunkRecorder()
        await recorder.begin(stream)
        return recorder
    }

    private func begin(_ stream: AsyncStream<[Int16]>) {
        reader = Task { [weak self] in
            for await samples in stream { await self?.append(samples, at: .now) }
            await self?.markFinished()
        }
    }

    private func append(_ samples: [Int16], at instant: ContinuousClock.Instant) {
        chunks.append(Chunk(samples: samples, arrival: instant))
    }

    private func markFinished() { finished = true }

    var count: Int { chunks.count }
    var samples: [Int16] { chunks.flatMap(\.samples) }

    func cancel() { reader?.cancel() }
}
