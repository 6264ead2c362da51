@testable import TestSupport
import XCTest
@testable import VoiceboxPocketsphinx
import VoiceboxSndfile
import VoiceboxCore

/// The facts behind `detectorWarmUp` and `discard`: pocketsphinx's detector calls the first
/// second of any noisy stream speech, and decoding that noise spoils the sentence after it.
final class DetectorWarmUpTests: XCTestCase {
    override func setUp() async throws {
        try TestData.requireModel()
    }

    /// Deterministic noise: a microphone's hiss at about σ 10 (a quiet room), before and under the speech.
    private func quietNoise(_ count: Int, seed: inout UInt64) -> [Int16] {
        (0..<count).map { _ in
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Int16(Int(seed >> 59) - 16) / 2  // -8 ... 7
        }
    }

    private func speechAfterNoise() throws -> (audio: [Int16], speechStart: Double) {
        let reader = try AudioFileReader(path: Recordings.path("goforward.raw"))
        var speech: [Int16] = []
        while case let chunk = try reader.read(), !chunk.isEmpty { speech += chunk }
        var seed: UInt64 = 42
        let lead = quietNoise(32_000, seed: &seed)
        let under = quietNoise(speech.count, seed: &seed)
        let mixed = zip(speech, under).map { Int16(clamping: Int($0) + Int($1)) }
        return (lead + mixed + quietNoise(16_000, seed: &seed), Double(lead.count) / 16_000)
    }

    func testTheFalseStartEndsWithinTheWarmUpAndDiscardingItKeepsTheSentenceIntact() async throws {
        let (audio, speechStart) = try speechAfterNoise()
        for discarding in [false, true] {
            let decoder = try await TestData.engine.makeDecoder(.init())
            XCTAssertEqual(decoder.detectorWarmUp, 1.5)
            XCTAssertEqual(decoder.speechEndDelay, 0.5, accuracy: 1e-9)
            var reports: [(time: Double, inSpeech: Bool)] = []
            var discarded = false
            for start in stride(from: 0, to: audio.count, by: 320) {  // 20 ms, as from the microphone
                let time = Double(start + 320) / 16_000
                let inSpeech = try await decoder.process(Array(audio[start..<min(start + 320, audio.count)]))
                if inSpeech != (reports.last?.inSpeech ?? false) { reports.append((time, inSpeech)) }
                if discarding, !discarded, reports.count == 2 {
                    try await decoder.discard()
                    discarded = true
                }
            }
            // Speech "heard" almost at once, over before the warm-up ends, long before the real speech.
            XCTAssertEqual(reports.first?.inSpeech, true)
            XCTAssertLessThan(reports.first?.time ?? 9, 0.3)
            XCTAssertLessThan(reports.dropFirst().first?.time ?? 9, decoder.detectorWarmUp)
            XCTAssertGreaterThan(reports.dropFirst(2).first?.time ?? 0, speechStart)
            let text = try await decoder.finish().text
            if discarding {
                XCTAssertEqual(text, "go forward ten meters")
            } else {
                XCTAssertNotEqual(text, "go forward ten meters", "the noise no longer spoils the sentence: is discard still needed?")
            }
        }
    }
}
