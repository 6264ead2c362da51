import Foundation
@testable import TestSupport
import VoiceboxCore
import XCTest
@testable import VoiceboxSpeechd

/// Speech and a voice listing at once, on a real speech-dispatcher: which comes first depends on
/// both having the CPU they need (the listing takes about a second of speech-dispatcher's), so it
/// runs in the speed tier, alone.
final class ListingBesideSpeechTests: SynthesizerTestCase {
    /// Speech asked for while a listing runs begins before the listing is over: it is not queued
    /// behind it. (speak() to .started: 0.09 s measured, 0.03 s without a listing; the listing takes
    /// about a second, most of it speech-dispatcher building its 483 KB reply. Before the listing
    /// connection got a read buffer, speech-dispatcher was blocked writing the list byte by byte and
    /// speech began only after it.)
    func testListingDoesNotDelaySpeaking() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        let listing = Task { () -> ContinuousClock.Instant in
            _ = try await bounded(30, "listVoices") { try await synthesizer.listVoices() }
            return ContinuousClock.now
        }
        try await Task.sleep(for: .milliseconds(50))  // the listing goes first (shorter only weakens the test)
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "Hello while listing."))
        let value1 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value1)
        let started = try XCTUnwrap(recorder.time(of: .started(1)))
        let value2 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value2, .done)
        let listed = try await listing.value
        XCTAssertLessThan(started, listed, "speech began only once the listing had ended")
    }
}
