import Foundation
import Glibc
@testable import TestSupport
import XCTest

final class DictationInsertionTests: XCTestCase {
    // What the sound server decides here: the microphone
    func testDictateTypesWhatWasHeard() async throws {
        try Recordings.require()
        let (stack, x) = try await xSession()
        let service = try await startService(on: stack)
        let wav = try Recordings.wav("goforward.raw", in: try makeTemporaryDirectory(self))
        let dictation = try stopsAtEnd(ClientRun(stack, ["dictate", "--output", "type"], environment: x.environment))
        _ = try await service.waitForNewRecognition(besides: [])
        try await service.waitForListening(true)
        let player = try stopsAtEnd(Player(wav, sink: stack.micSink))
        let status = await dictation.finish()
        await player.waitUntilDone()
        XCTAssertEqual(status, 0, dictation.stderr)
        XCTAssertEqual(dictation.stdout, "", "typed, not printed")
        try await x.waitFor("Go forward ten meters")
    }
}
