import Foundation
@testable import TestSupport
import XCTest

/// Work that loads the machine on purpose: checks that decode the same recording many times over
/// with the language model, as dictation hears it. Their quick forms, with a grammar of the four
/// words, run in UnitTests; these run once, uninstrumented.
final class BulkDecodingTests: XCTestCase {
    override func setUp() async throws {
        try TestData.requireModel()
    }

    /// UnitTests' RecognitionTests.testACutInsideSpeechLosesNoWord with the language model: at
    /// whatever chunk a cut inside speech comes, the replay keeps the file's words (23 decodes of
    /// goforward, 24-160 s here).
    func testACutInsideSpeechLosesNoWordWithTheLanguageModel() async throws {
        let outcome = try await CutInsideSpeech.run(grammar: nil)
        for (cutAt, text) in outcome.replayed {
            XCTAssertEqual(text, "go forward ten meters", "cut at chunk \(cutAt)")
        }
        let lossy = outcome.unreplayed.filter { $0 != "go forward ten meters" }
        XCTAssertFalse(lossy.isEmpty, "no cut lost a word without the replay: this test cannot fail")
        print("METRIC cuts inside speech that changed the words without a replay: \(lossy)")
    }
}
