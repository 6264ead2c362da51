import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import XCTest

/// The `voicebox` command where the sound server has its part: say, listen from the microphone,
/// monitor, dictate's cross-process control (the rest: StackTests' ClientFileTests). Each test ends what it started (its speech
/// stopped, its dictation or listen ended): one voiceboxd serves them all.
final class DictationTests: ServiceTestCase {
    override class var sharesService: Bool { true }

    /// The stack and the class's voiceboxd.
    private func classService() -> (Stack, ServiceHarness) { (stack, service) }

    // What the sound server decides here: speech
    func testSayReadsStandardInputAndSpeaksLongTextInParts() async throws {
        let (stack, service) = classService()
        let said = try stopsAtEnd(ClientRun(stack, ["say", "--json", "-"], input: Array("Read from standard input.".utf8)))
        let saidStatus = await said.finish()
        XCTAssertEqual(saidStatus, 0, said.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(said.stdout.utf8)) as? [String: Any], said.stdout)
        XCTAssertEqual((object["ids"] as? [Int])?.count, 1)
        let empty = try stopsAtEnd(ClientRun(stack, ["say", "-"], input: Array(" \n".utf8)))
        let emptyStatus = await empty.finish()
        XCTAssertEqual(emptyStatus, 64, empty.stderr)
        XCTAssertEqual(empty.stderr, "voicebox: nothing to say: standard input was empty\n")

        // 150 KB: more than Speak takes at once (64 KiB), queued as three utterances in order.
        let long = String(repeating: "Voicebox speaks every sentence of this text in order. ", count: 2800)
        let queued = try stopsAtEnd(ClientRun(stack, ["say", "--no-wait", "--volume", "0", "-"], input: Array(long.utf8)))
        let queuedStatus = await queued.finish()
        XCTAssertEqual(queuedStatus, 0, queued.stderr)
        let ids = queued.stdout.split(separator: "\n").compactMap { UInt64($0) }
        XCTAssertEqual(ids.count, 3, queued.stdout)
        XCTAssertEqual(ids, ids.sorted())
        try await service.proxy.call(Speech1.stopAllSpeaking)
    }

    // What the sound server decides here: the microphone
    func testListenOnATerminalShowsALevelMeterAndThePartialText() async throws {
        try Recordings.require()
        let (stack, service) = classService()
        let wav = try Recordings.wav("goforward.raw", in: try makeTemporaryDirectory(self))
        let client = try stopsAtEnd(ClientRun(stack, ["listen", "--partial"], terminal: true))
        _ = try await service.waitForNewRecognition(besides: [])
        try await service.waitForListening(true)
        let player = try stopsAtEnd(Player(wav, sink: stack.micSink))
        let status = await client.finish()
        await player.waitUntilDone()
        XCTAssertEqual(status, 0, client.stderr)
        let output = client.stdout
        XCTAssertTrue(output.contains("listening ["), output.debugDescription)
        XCTAssertTrue(output.contains("] go"), "the partial text on the meter's line: \(output.debugDescription)")
        // The meter's line is cleared before the result, which stays alone. (The words heard through
        // a loaded sound server may end differently, "ten meter": the display is what is tested here,
        // the words in RecognitionTests.)
        XCTAssertTrue(output.hasSuffix("\n"), output.debugDescription)
        let lastLine = output.dropLast().split(separator: "\n", omittingEmptySubsequences: false).last ?? ""
        let pieces = lastLine.components(separatedBy: "\r\u{1B}[K")
        XCTAssertGreaterThan(pieces.count, 1, "the meter's line is cleared: \(output.debugDescription)")
        XCTAssertTrue(pieces.last?.hasPrefix("go forward ten") == true, output.debugDescription)
    }

    // What the sound server decides here: speech
    func testMonitorPrintsTheSignalsOfASay() async throws {
        let (stack, _) = classService()
        let monitor = try stopsAtEnd(ClientRun(stack, ["monitor"]))
        try await waitUntil("monitor to subscribe") { monitor.stderr.contains("watching") }
        let (sayStatus, say) = try await voicebox(stack, ["say", "--json", "Hello from the monitor test"])
        XCTAssertEqual(sayStatus, 0, say.stderr)
        let said = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(say.stdout.utf8)) as? [String: Any])
        let id = try XCTUnwrap(said["id"] as? Int)
        try await waitUntil("SpeechFinished in the monitor's output") { monitor.stdout.contains("SpeechFinished \(id)") }
        monitor.process.signal(SIGINT)
        let status = await monitor.finish()
        XCTAssertEqual(status, 0)
        let lines = monitor.stdout.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains("SpeechStarted \(id)"), "\(lines)")
        XCTAssertTrue(lines.contains("SpeechFinished \(id) done"), "\(lines)")
        // The duck of other audio, announced with its info: reason and id first.
        if let interruption = lines.first(where: { $0.hasPrefix("AudioInterruption began") }) {
            XCTAssertTrue(interruption.hasPrefix("AudioInterruption began reason=speaking id=\(id) "), interruption)
        }
    }

    // MARK: Dictation across processes

    /// Starts `first` (a dictation), waits until the microphone is open, plays goforward into it
    /// and waits until it has been played (and decoded).
    private func dictateWhilePlaying(_ first: [String]) async throws -> (Stack, ServiceHarness, ClientRun) {
        try Recordings.require()
        let (stack, service) = classService()
        let directory = try makeTemporaryDirectory(self)
        let wav = try Recordings.wav("goforward.raw", in: directory)
        let dictation = try stopsAtEnd(ClientRun(stack, first))
        _ = try await service.waitForNewRecognition(besides: [])
        try await service.waitForListening(true)
        let id = try await service.proxy.get(Speech1.listeningID)
        XCTAssertNotEqual(id, 0, "ListeningID names the dictation")
        let player = try stopsAtEnd(Player(wav, sink: stack.micSink))
        await player.waitUntilDone()
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertNil(dictation.process.poll(), "pauses do not end a dictation a key controls")
        return (stack, service, dictation)
    }

    // What the sound server decides here: the microphone
    func testDictateToggleTwiceAcrossTwoProcesses() async throws {
        let (stack, service, first) = try await dictateWhilePlaying(["dictate", "--toggle"])
        let (secondStatus, second) = try await voicebox(stack, ["dictate", "--toggle"])
        XCTAssertEqual(secondStatus, 0, second.stderr)
        XCTAssertEqual(second.stdout, "", "the second press only ends the first")
        let status = await first.finish()
        XCTAssertEqual(status, 0, first.stderr)
        XCTAssertEqual(first.stdout, "Go forward ten meters\n", "capitalized")
        try await waitUntil("ListeningID to be 0") { (try? await service.property("ListeningID"))?.uint64 == 0 }
    }

    // What the sound server decides here: the microphone
    func testDictatePushToTalk() async throws {
        let (stack, _, first) = try await dictateWhilePlaying(["dictate", "--start", "--literal"])
        let (releaseStatus, release) = try await voicebox(stack, ["dictate", "--stop"])
        XCTAssertEqual(releaseStatus, 0, release.stderr)
        let status = await first.finish()
        XCTAssertEqual(status, 0, first.stderr)
        XCTAssertEqual(first.stdout, "go forward ten meters\n")
    }

    // What the sound server decides here: the microphone
    func testShortcutsLeaveAnotherProgramsRecognitionAlone() async throws {
        let (stack, service) = classService()
        // Another program (not voicebox dictate) holds the microphone.
        let other = try stopsAtEnd(ClientRun(stack, ["listen", "--max-seconds", "60"]))
        let id = try await service.waitForNewRecognition(besides: [])
        try await service.waitForListening(true)
        let noDictation = try await service.proxy.get(Speech1.dictationID)
        XCTAssertEqual(noDictation, 0, "a listen is no dictation")
        for mode in ["--toggle", "--stop", "--cancel"] {
            let (status, shortcut) = try await voicebox(stack, ["dictate", mode])
            XCTAssertEqual(status, 5, "\(mode): \(shortcut.stderr)")
            XCTAssertEqual(shortcut.stderr,
                           "voicebox: the microphone is held by another program's recognition (\(id)), not a dictation: left alone\n")
        }
        XCTAssertNil(other.process.poll(), "the other program still listens")
        let stillListening = try await service.proxy.get(Speech1.listeningID)
        XCTAssertEqual(stillListening, id)
        other.process.signal(SIGINT)
        _ = await other.finish()
        try await waitUntil("ListeningID to be 0") { (try? await service.property("ListeningID"))?.uint64 == 0 }
        // And a dictation is named by DictationID for its whole life.
        let dictation = try stopsAtEnd(ClientRun(stack, ["dictate", "--toggle", "--output", "stdout", "--no-cue"]))
        let dictationID = try await service.waitForNewRecognition(besides: [id])
        try await waitUntil("DictationID") { (try? await service.property("DictationID"))?.uint64 == dictationID }
        let (cancelStatus, cancel) = try await voicebox(stack, ["dictate", "--cancel"])
        XCTAssertEqual(cancelStatus, 0, cancel.stderr)
        let dictationStatus = await dictation.finish()
        XCTAssertEqual(dictationStatus, 130)
        try await waitUntil("DictationID to be 0") { (try? await service.property("DictationID"))?.uint64 == 0 }
    }

    // What the sound server decides here: the microphone
    func testDictateCancelEndsTheFirstWithNoOutput() async throws {
        let (stack, service) = classService()
        let first = try stopsAtEnd(ClientRun(stack, ["dictate", "--toggle"]))
        _ = try await service.waitForNewRecognition(besides: [])
        let (cancelStatus, cancel) = try await voicebox(stack, ["dictate", "--cancel"])
        XCTAssertEqual(cancelStatus, 0, cancel.stderr)
        let status = await first.finish()
        XCTAssertEqual(status, 130)
        XCTAssertEqual(first.stdout, "")
        XCTAssertEqual(first.stderr, "")
    }
}
