import Foundation
import Synchronization
@testable import TestSupport
import XCTest
@testable import VoiceboxPocketsphinx
import VoiceboxSndfile
import VoiceboxCore

/// The engine's housekeeping: the warm pool, the idle unload, the log, reuse.
final class EngineTests: XCTestCase {
    override func setUp() async throws {
        try TestData.requireModel()
    }

    private static let cards = RecognitionConfiguration(grammar: """
        #JSGF V1.0; grammar c; public <c> = <rank> <rank> | <rank> of <suit>;
        <rank> = four | five | ten | seven; <suit> = clubs | hearts;
        """)

    /// Idle 4 s: used again 2.5 s after it went idle, the decoder is still warm 2.75 s after that
    /// (5.25 s: 1.25 s past the first timer's 4 s, 1.25 s before the second's 6.5 s), then unloads.
    /// (A loaded machine fails it only with a sleep 1.25 s late.)
    func testModelsStayWarmThenUnloadWhenIdle() async throws {
        let engine = PocketsphinxEngine(idleUnloadAfter: .seconds(4))
        var decoder: (any SpeechDecoder)? = try await engine.makeDecoder(Self.cards)
        let warmWhileBusy = await engine.warmDecoderCount
        XCTAssertEqual(warmWhileBusy, 0)
        XCTAssertNotNil(decoder)
        decoder = nil
        try await waitUntil("a warm decoder") { await engine.warmDecoderCount == 1 }
        // Used again before the timer fires: the timer starts over.
        try await Task.sleep(for: .milliseconds(2500))
        decoder = try await engine.makeDecoder(Self.cards)
        decoder = nil
        try await waitUntil("a warm decoder") { await engine.warmDecoderCount == 1 }
        try await Task.sleep(for: .milliseconds(2750))
        let stillWarm = await engine.warmDecoderCount
        XCTAssertEqual(stillWarm, 1, "the first timer was cancelled")
        try await waitUntil("the model unloaded") { await engine.warmDecoderCount == 0 }
    }

    func testAPooledDecoderHearsLikeAFreshOne() async throws {
        let fresh = try await PocketsphinxEngine().transcribeFile(path: Recordings.path("cards/004.wav"),
                                                                   configuration: Self.cards)
        let engine = PocketsphinxEngine()
        _ = try await engine.transcribeFile(path: Recordings.path("numbers.raw"), configuration: Self.cards)
        _ = try await engine.transcribeFile(path: Recordings.path("cards/005.wav"), configuration: Self.cards)
        let reused = try await engine.transcribeFile(path: Recordings.path("cards/004.wav"), configuration: Self.cards)
        XCTAssertEqual(reused, fresh)
        XCTAssertEqual(fresh.result.text, "five five")
    }

    func testPocketsphinxLogsGoToTheSinkNotToStderr() async throws {
        let lines = LockedArray<String>()
        let stderrText = try await capturingStandardError {
            let engine = PocketsphinxEngine(log: { lines.append($0) })
            let file = try await engine.transcribeFile(path: Recordings.path("goforward.raw"))
            XCTAssertEqual(file.result.text, "go forward ten meters")
            _ = try? await engine.makeDecoder(.init(grammar: "#JSGF V1.0; grammar g; public <a> = (;"))
        }
        XCTAssertEqual(stderrText, "")
        XCTAssertTrue(lines.values.contains { $0.hasPrefix("INFO: ") }, "model loading is logged")
        XCTAssertTrue(lines.values.contains { $0.contains("syntax error") }, "the parse error is logged too")
    }

    /// A grammar search keeps one utterance across a pause; the words after it still get their
    /// own times although pocketsphinx drops the silence.
    func testWordTimesAcrossAPause() async throws {
        let audio = try AudioFileReader(path: Recordings.path("goforward.raw")).readAll()
        let grammar = RecognitionConfiguration(grammar: """
            #JSGF V1.0; grammar move; public <move> = go <direction> <distance> meters;
            <direction> = forward | backward; <distance> = one | two | five | ten;
            """)
        let straight = try decode(audio, try await TestData.engine.makeDecoder(grammar))
        XCTAssertEqual(straight.text, "go forward ten meters")
        let words = straight.words
        // 1.25 s of faint noise between "forward" and "ten": the detector falls silent there
        // (pocketsphinx drops those frames) and hears speech again.
        let cut = Int((words[1].end + words[2].start) / 2 * 16000)
        var generator = SystemRandomNumberGenerator()
        let noise = (0..<20000).map { _ in Int16.random(in: -3...3, using: &generator) }
        let paused = Array(audio[..<cut]) + noise + Array(audio[cut...])
        let decoder = try await TestData.engine.makeDecoder(grammar)
        var flags: [Bool] = []
        let result = try decode(paused, decoder) { flags.append($0) }
        XCTAssertEqual(result.text, "go forward ten meters")
        XCTAssertTrue(flags.split(separator: false).count >= 2, "two stretches of speech: \(flags)")
        for (before, after) in zip(words, result.words) {
            let shift = before.start < Double(cut) / 16000 ? 0 : 1.25
            XCTAssertEqual(after.start, before.start + shift, accuracy: 0.031, "\(before) → \(after)")
            XCTAssertEqual(after.end, before.end + shift, accuracy: 0.031, "\(before) → \(after)")
        }
    }

    private func decode(_ audio: [Int16], _ decoder: any SpeechDecoder,
                        inSpeech: (Bool) -> Void = { _ in }) throws -> RecognitionResult {
        for start in stride(from: 0, to: audio.count, by: 2048) {
            inSpeech(try decoder.process(Array(audio[start..<min(start + 2048, audio.count)])))
        }
        return try decoder.finish()
    }
}

extension AudioFileReader {
    func readAll() throws -> [Int16] {
        var samples: [Int16] = []
        while case let chunk = try read(), !chunk.isEmpty { samples += chunk }
        return samples
    }
}

/// Runs `body` with file descriptor 2 pointed at a temporary file; returns what was written.
func capturingStandardError(_ body: () async throws -> Void) async throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("stderr-\(UUID().uuidString)").path
    let file = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
    let saved = dup(2)
    defer { unlink(path) }
    fflush(nil)  // all C streams
    dup2(file, 2)
    do {
        try await body()
    } catch {
        dup2(saved, 2)
        throw error
    }
    fflush(nil)  // all C streams
    dup2(saved, 2)
    close(saved)
    close(file)
    return (try? String(contentsOfFile: path, encoding: .utf8)) ?? "unreadable"
}
