import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import VoiceboxThreads
import XCTest

final class StreamSessionTests: ServiceTestCase {
    override class var sharesService: Bool { true }
    override class var usesRecordings: Bool { true }
    private let expected = "go forward ten meters"

    // What the sound server decides here: no microphone taken, as the server sees it
    func testAStreamAsFastAsItCanAndInRealTimeGivesTheFilesWords() async throws {
        let service = self.service!
        let file = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(file.text, expected)

        let fast = try PipeWriter(try Recordings.bytes())
        let asFast = try await service.recognize(["stream": .unixFD(fast.readEnd), "partial_results": .boolean(true)])
        fast.closeReadEnd()
        XCTAssertEqual(asFast.text, file.text)
        XCTAssertEqual(asFast.reason, "end_of_file")
        XCTAssertEqual(asFast.duration, file.duration, accuracy: 1e-6)
        XCTAssertEqual(asFast.words.map(\.word), file.words.map(\.word))

        // 20 ms of audio every 20 ms: a live source. (How fast either is answered: bench/recognition.)
        let live = try PipeWriter(try Recordings.bytes(), piece: 640, pause: .milliseconds(20))
        let asLive = try await service.recognize(["stream": .unixFD(live.readEnd)])
        live.closeReadEnd()
        XCTAssertEqual(asLive.text, file.text)
        XCTAssertEqual(asLive.reason, "end_of_file")
        XCTAssertEqual(asLive.duration, file.duration, accuracy: 1e-6)

        // The signals the microphone has, and the microphone left alone.
        let signals = service.recognitionSignals(of: asFast.id).map(\.member)
        XCTAssertEqual(signals.first, "RecognitionStarted")
        XCTAssertEqual(signals.last, "RecognitionFinished")
        XCTAssertTrue(signals.contains("AudioLevel"), "\(signals)")
        XCTAssertTrue(signals.contains("RecognitionPartial"), "\(signals)")
        XCTAssertFalse(service.signals.contains { $0.member == "AudioInterruption" }, "other audio is left alone by default")
        let listeningID = try await service.property("ListeningID")?.uint64
        XCTAssertEqual(listeningID, 0)
    }

    // What the sound server decides here: other audio paused for a stream
    func testOthersAppliesWhenGiven() async throws {
        let (service, stack) = (self.service!, self.stack!)
        let music = try PlayingStream(sink: stack.sink, role: "music")
        addTeardownBlock { await music.stop() }
        _ = try await music.waitUntilListed()
        let writer = try PipeWriter(try Recordings.bytes(), piece: 640, pause: .milliseconds(20))
        let heard = try await service.recognize(["stream": .unixFD(writer.readEnd), "others": .string("duck")])
        writer.closeReadEnd()
        XCTAssertEqual(heard.text, expected)
        try await waitUntil("AudioInterruption ended") {
            service.signals.contains { $0.member == "AudioInterruption" && $0.arguments.first?.string == "ended" }
        }
        let interruptions = service.signals.filter { $0.member == "AudioInterruption" }
        XCTAssertEqual(interruptions.map { $0.arguments.first?.string ?? "" }, ["began", "ended"])
        let began = interruptions.first?.arguments.dropFirst().first?.vardictEntries ?? [:]
        XCTAssertEqual(began["reason"]?.string, "listening")
        XCTAssertEqual(began["id"]?.uint64, heard.id)
        XCTAssertEqual(began["ducked_streams"]?.uint32, 1, "the music was ducked while the stream was heard")
    }
}
