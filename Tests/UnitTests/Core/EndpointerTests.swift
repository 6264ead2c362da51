@testable import TestSupport
import XCTest
import VoiceboxCore

final class EndpointerTests: XCTestCase {
    /// Feeds a script of (in speech?, seconds) and returns every decision.
    private func run(_ endpointer: inout Endpointer, _ script: [(Bool, Double)]) -> [Endpointer.Decision] {
        script.map { endpointer.feed(inSpeech: $0.0, seconds: $0.1) }
    }

    func testSilenceBeforeSpeechNeverEnds() {
        var e = Endpointer(silenceSeconds: 0.5)
        let decisions = run(&e, Array(repeating: (false, 0.1), count: 100))
        XCTAssertEqual(Set(decisions), [.continue])
        XCTAssertFalse(e.heardSpeech)
        XCTAssertEqual(e.trailingSilenceSeconds, 0)
        XCTAssertEqual(e.elapsedSeconds, 10, accuracy: 1e-9)
    }

    func testEndsAfterExactlyTheTrailingSilence() {
        var e = Endpointer()  // 1.0 s
        _ = run(&e, [(true, 0.1), (true, 0.1)])
        // Ten chunks of 0.1 s: as Doubles they sum to 0.9999999999999999, which must still count.
        let decisions = run(&e, Array(repeating: (false, 0.1), count: 10))
        XCTAssertEqual(decisions, Array(repeating: .continue, count: 9) + [.endpoint])
        XCTAssertEqual(e.trailingSilenceSeconds, 1.0, accuracy: 1e-9)
    }

    func testSpeechResetsTheSilence() {
        var e = Endpointer(silenceSeconds: 0.3)
        let decisions = run(&e, [(true, 0.1), (false, 0.1), (false, 0.1), (true, 0.1),
                                 (false, 0.1), (false, 0.1), (false, 0.1)])
        XCTAssertEqual(decisions, [.continue, .continue, .continue, .continue, .continue, .continue, .endpoint])
    }

    func testMaxDurationWithoutSpeech() {
        var e = Endpointer(silenceSeconds: 1, maxSeconds: 0.5)
        let decisions = run(&e, Array(repeating: (false, 0.128), count: 4))
        XCTAssertEqual(decisions, [.continue, .continue, .continue, .maxDuration])
    }

    func testMaxDurationDuringSpeech() {
        var e = Endpointer(silenceSeconds: 1, maxSeconds: 2)
        let decisions = run(&e, Array(repeating: (true, 0.5), count: 4))
        XCTAssertEqual(decisions.last, .maxDuration)
        XCTAssertEqual(Array(decisions.dropLast()), [.continue, .continue, .continue])
    }

    func testEndpointWinsOverASimultaneousLimit() {
        var e = Endpointer(silenceSeconds: 0.5, maxSeconds: 1)
        XCTAssertEqual(run(&e, [(true, 0.5), (false, 0.5)]), [.continue, .endpoint])
    }

    func testDecisionStaysUntilReset() {
        var e = Endpointer(silenceSeconds: 0.2)
        _ = run(&e, [(true, 0.1), (false, 0.2)])
        XCTAssertEqual(e.decision, .endpoint)
        XCTAssertEqual(e.feed(inSpeech: false, seconds: 0.1), .endpoint)
        e.reset()
        XCTAssertEqual(e.decision, .continue)
        XCTAssertFalse(e.heardSpeech)
        XCTAssertEqual(e.elapsedSeconds, 0)
        XCTAssertEqual(e.silenceSeconds, 0.2, "reset keeps the settings")
    }

    func testZeroSilenceEndsAtTheFirstQuietChunk() {
        var e = Endpointer(silenceSeconds: 0)
        XCTAssertEqual(run(&e, [(false, 0.1), (true, 0.1), (true, 0.1), (false, 0.1)]),
                       [.continue, .continue, .continue, .endpoint])
    }

    func testEmptyChunksChangeNothing() {
        var e = Endpointer(silenceSeconds: 0.1)
        _ = run(&e, [(true, 0.1)])
        XCTAssertEqual(run(&e, [(false, 0), (false, 0), (false, -1), (false, .nan)]),
                       [.continue, .continue, .continue, .continue])
    }

    func testHugeLimitsDoNotOverflow() {
        var e = Endpointer(silenceSeconds: 1e300, maxSeconds: .infinity)
        XCTAssertEqual(run(&e, [(true, 1e6), (false, 1e6)]), [.continue, .continue])
    }
}
