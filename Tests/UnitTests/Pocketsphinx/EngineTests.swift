import Foundation
import Synchronization
@testable import TestSupport
import XCTest
@testable import VoiceboxPocketsphinx
import VoiceboxSndfile
import VoiceboxCore

/// A loaded model's reuse, pocketsphinx's log, and word times across a pause.
final class EngineTests: XCTestCase {
    override func setUp() async throws {
        try TestData.requireModel()
    }

    private static let cards = RecognitionConfiguration(grammar: """
        #JSGF V1.0; grammar c; public <c> = <rank> <rank> | <rank> of <suit>;
        <rank> = four | five | ten | seven; <suit> = clubs | hearts;
        """)

    /// A warm decoder worker decodes one recognition after another on the model it loaded: what
    /// it decoded before must not change what it hears next.
    func testAModelsNextDecoderHearsLikeAFreshOne() async throws {
        let fresh = try await TestData.engine.transcribeFile(path: Recordings.path("cards/004.wav"),
                                                             configuration: Self.cards)
        let model = try TestData.engine.loadModel(for: Self.cards)
        _ = try await transcribe("numbers.raw", on: model)
        _ = try await transcribe("cards/005.wav", on: model)
        let reused = try await transcribe("cards/004.wav", on: model)
        XCTAssertEqual(reused, fresh)
        XCTAssertEqual(fresh.result.text, "five five")
    }

    /// One recognition on `model`; its decoder is gone when this returns, as the next one needs.
    private func transcribe(_ name: String, on model: LoadedModel) async throws -> FileReading.Outcome {
        try await FileReading.read(try AudioFileReader(path: Recordings.path(name)), through: try model.decoder(for: Self.cards))
    }

    func testPocketsphinxLogsGoToTheSinkNotToStderr() async throws {
        let lines = LockedArray<String>()
        let stderrText = try await capturingStandardError {
            let engine = InProcessEngine(log: { lines.append($0) })
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
        let straight = try await decode(audio, try await TestData.engine.makeDecoder(grammar))
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
        let result = try await decode(paused, decoder) { flags.append($0) }
        XCTAssertEqual(result.text, "go forward ten meters")
        XCTAssertTrue(flags.split(separator: false).count >= 2, "two stretches of speech: \(flags)")
        for (before, after) in zip(words, result.words) {
            let shift = before.start < Double(cut) / 16000 ? 0 : 1.25
            XCTAssertEqual(after.start, before.start + shift, accuracy: 0.031, "\(before) → \(after)")
            XCTAssertEqual(after.end, before.end + shift, accuracy: 0.031, "\(before) → \(after)")
        }
    }

    private func decode(_ audio: [Int16], _ decoder: any SpeechDecoder,
                        inSpeech: (Bool) -> Void = { _ in }) async throws -> RecognitionResult {
        for start in stride(from: 0, to: audio.count, by: 2048) {
            inSpeech(try await decoder.process(Array(audio[start..<min(start + 2048, audio.count)])))
        }
        return try await decoder.finish()
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
