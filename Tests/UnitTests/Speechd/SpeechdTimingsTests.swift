import VoiceboxCore
import XCTest
@testable import VoiceboxSpeechd

/// The synthesizer and the voice list take every wait and delay from `Bounds`: the standard values
/// are the ones they always had, and each bound reaches its own use (no crossed wires).
final class SpeechdTimingsTests: XCTestCase {
    /// (All but speechd-list, which was speechd-reply's 2 s: see VoiceLister.)
    func testTheStandardBoundsAreTheValuesTheSynthesizerAlwaysHad() {
        let timings = SpeechdTimings(Bounds())
        XCTAssertEqual(timings.reply, 2)
        XCTAssertEqual(timings.list, 10)
        XCTAssertEqual(timings.accept, 0.25)
        XCTAssertEqual(timings.begin, 3)
        XCTAssertEqual(timings.stallLimit, 30)
        XCTAssertEqual(timings.heartbeat, 3)
        XCTAssertEqual(timings.reconnectFirst, 0.25)
        XCTAssertEqual(timings.reconnectLimit, 10)
        XCTAssertEqual(timings.eagerRetry, 1)
        XCTAssertEqual(timings.restartFirst, 1)
        XCTAssertEqual(timings.restartLimit, 30)
        XCTAssertEqual(timings.restartReset, 60)
        XCTAssertEqual(timings.start, .seconds(20))
        XCTAssertEqual(timings.stopGrace, .milliseconds(500))
        XCTAssertEqual(timings.exit, .seconds(2))
        let voices = VoiceCache.Policy()
        XCTAssertEqual(voices.firstRetry, .milliseconds(250))
        XCTAssertEqual(voices.longestRetry, .seconds(10))
        XCTAssertEqual(voices.maximumWait, .seconds(10))
    }

    func testEachBoundSetOnTheCommandLineReachesItsOwnUse() throws {
        var bounds = Bounds()
        // voices-wait reaches the voice cache as its maximumWait, through DaemonOptions (DaemonOptionsTests).
        let speechd = Bound.allCases.filter { ($0.rawValue.hasPrefix("speechd-") || $0.rawValue.hasPrefix("voices-")) && $0 != .voicesWait }
        // A distinct value for each: 1.001 s, 1.002 s ...
        for (index, bound) in speechd.enumerated() { try bounds.set("\(bound.rawValue)=\(1 + Double(index + 1) / 1000)") }
        let timings = SpeechdTimings(bounds)
        let seconds: [Bound: Double] = [
            .speechdReply: timings.reply, .speechdList: timings.list, .speechdAccept: timings.accept, .speechdBegin: timings.begin,
            .speechdStallLimit: timings.stallLimit, .speechdHeartbeat: timings.heartbeat,
            .speechdReconnectFirst: timings.reconnectFirst, .speechdReconnectLimit: timings.reconnectLimit,
            .speechdEagerRetry: timings.eagerRetry, .speechdRestartFirst: timings.restartFirst,
            .speechdRestartLimit: timings.restartLimit, .speechdRestartReset: timings.restartReset,
            .speechdStart: timings.start.inSeconds, .speechdStopGrace: timings.stopGrace.inSeconds,
            .speechdExit: timings.exit.inSeconds,
        ]
        let policy = VoiceCache.Policy(bounds: bounds, maximumWait: .seconds(30))
        let all = seconds.merging([.voicesRetryFirst: policy.firstRetry.inSeconds,
                                   .voicesRetryLimit: policy.longestRetry.inSeconds]) { $1 }
        XCTAssertEqual(Set(all.keys), Set(speechd), "a speech bound that nothing reads, or one read twice")
        for bound in speechd {
            XCTAssertEqual(try XCTUnwrap(all[bound]), bounds[bound].inSeconds, accuracy: 1e-9, bound.rawValue)
        }
        XCTAssertEqual(policy.maximumWait, .seconds(30))
    }

    func testABoundIsNamedAsItWasSet() {
        XCTAssertEqual(SpeechdTimings.text(2), "2 s")
        XCTAssertEqual(SpeechdTimings.text(Duration.milliseconds(300).inSeconds), "0.3 s")
        XCTAssertEqual(SpeechdTimings.text(Duration.milliseconds(1500).inSeconds), "1.5 s")
    }
}
