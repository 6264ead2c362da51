@testable import TestSupport
import XCTest
@testable import VoiceboxCore
@testable import VoiceboxPocketsphinx
import VoiceboxSndfile

/// A listening stream that gives its decoder to another caller's stream in a pause goes on with a
/// fresh one, which first hears the last audio (`StreamHeard.hearFirst`). Wherever in the pause the
/// cut falls, no word is lost nor heard twice. (CI once heard "go forward ten meters forward ten
/// meters": the cut fell just as the next "go" began, before the detector called it speech.)
/// Bulk decoding (15 cuts, two or three decodes of goforward twice each with the language model,
/// 25-37 s): here, run once and uninstrumented, not in the unit tier. A grammar of the four
/// words would decode faster but hides the loss it must show (`lostWithoutOnset` stays nil).
final class StreamTakeOverTests: XCTestCase {
    override func setUp() async throws {
        try TestData.requireModel()
    }

    func testAFreshDecoderTakingOverAnywhereInAPauseLosesNoWord() async throws {
        let reader = try AudioFileReader(path: Recordings.path("goforward.raw"))
        var speech: [Int16] = []
        while case let chunk = try reader.read(), !chunk.isEmpty { speech += chunk }
        let audio = speech + speech
        let expected = "go forward ten meters go forward ten meters"
        let chunk = 320  // 20 ms

        // Where a stream may yield: after speech, in the second copy's lead-in, the detector saying
        // silence. Every other 20 ms step, for time (about 3x real time per decoder here).
        let probe = try await TestData.engine.makeDecoder(.init())
        var cuts: [Int] = []
        var heardSpeech = false
        for start in stride(from: 0, to: audio.count - chunk, by: chunk) {
            let inSpeech = try await probe.process(Array(audio[start..<start + chunk]))
            if start + chunk > speech.count, inSpeech { break }  // the second copy's speech
            heardSpeech = heardSpeech || inSpeech
            if heardSpeech, !inSpeech, start + chunk > speech.count, start % (2 * chunk) == 0 { cuts.append(start + chunk) }
        }
        _ = try await probe.finish()
        XCTAssertGreaterThan(cuts.count, 5, "a pause to cut in")

        func decoded(_ samples: ArraySlice<Int16>, by decoder: any SpeechDecoder) async throws -> String {
            for start in stride(from: samples.startIndex, to: samples.endIndex, by: chunk) {
                _ = try await decoder.process(Array(samples[start..<min(start + chunk, samples.endIndex)]))
            }
            return try await decoder.finish().text
        }
        func afterTakingOver(at cut: Int, inPauseAfterSpeech: Bool) async throws -> String {
            let fresh = try await TestData.engine.makeDecoder(.init())
            try await StreamHeard.hearFirst(Array(audio[max(0, cut - StreamHeard.recentSamples)..<cut]), into: fresh,
                                      inPauseAfterSpeech: inPauseAfterSpeech)
            return try await decoded(audio[cut...], by: fresh)
        }
        func joined(_ texts: String...) -> String { texts.filter { !$0.isEmpty }.joined(separator: " ") }

        var lostWithoutOnset: Double?
        // Latest cut first: the word is lost only just before it is called speech.
        for cut in cuts.reversed() {
            let before = try await decoded(audio[..<cut], by: try await TestData.engine.makeDecoder(.init()))
            let after = try await afterTakingOver(at: cut, inPauseAfterSpeech: true)
            XCTAssertEqual(joined(before, after), expected, "cut at \(Double(cut) / 16_000) s")
            if lostWithoutOnset == nil, joined(before, try await afterTakingOver(at: cut, inPauseAfterSpeech: false)) != expected {
                lostWithoutOnset = Double(cut) / 16_000
            }
        }
        print("METRIC cuts in a pause: \(cuts.count); the whole warm-up forgotten lost a word at \(lostWithoutOnset.map { "\($0) s" } ?? "none")")
        XCTAssertNotNil(lostWithoutOnset, "forgetting the whole warm-up no longer loses a word: is the onset still needed?")
    }
}
