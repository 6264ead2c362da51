import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxInterface
import XCTest

/// `voicebox ARGUMENTS` on the stack, run to its end: its exit status and what it wrote.
private func voicebox(_ stack: Stack, _ arguments: [String], terminal: Bool = false) async throws -> (Int32?, ClientRun) {
    let client = try ClientRun(stack, arguments, terminal: terminal)
    return (await client.finish(), client)
}

/// The `voicebox` command against a real voiceboxd: listen, monitor, status, dictate's
/// cross-process control, and its exit statuses. Each test ends what it started (its speech
/// stopped, its dictation or listen ended): one voiceboxd serves them all.
final class DictationTests: ServiceTestCase {
    override class var sharesService: Bool { true }

    /// The stack and the class's voiceboxd.
    private func classService() -> (Stack, ServiceHarness) { (stack, service) }

    func testListenToAFile() async throws {
        try Recordings.require()
        let (stack, _) = classService()
        let (status, client) = try await voicebox(stack, ["listen", "--file", Recordings.path("goforward.raw")])
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertEqual(client.stdout, "go forward ten meters\n", "only the result when stdout is no terminal")

        let (jsonStatus, json) = try await voicebox(stack, ["listen", "--json", "--file", Recordings.path("goforward.raw")])
        XCTAssertEqual(jsonStatus, 0, json.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(object["text"] as? String, "go forward ten meters")
        XCTAssertEqual(object["reason"] as? String, "end_of_file")
        XCTAssertEqual((object["words"] as? [[String: Any]])?.count, 4)
    }

    func testListenOpensTheFileItselfSoAnyNameWorks() async throws {
        try Recordings.require()
        let (stack, _) = classService()
        let directory = try makeTemporaryDirectory(self)
        let wav = try Recordings.wav("goforward.raw", in: directory)
        // A name that is not UTF-8 (the service never sees it: it gets the file open, as fd).
        let odd = (Array(directory.path.utf8) + Array("/x_".utf8) + [0xFF] + Array(".wav".utf8) + [0]).map { CChar(bitPattern: $0) }
        XCTAssertEqual(odd.withUnsafeBufferPointer { rename(wav, $0.baseAddress!) }, 0)
        let client = try ClientRun(stack, shell: "exec \"$0\" listen --file \"$1/x_$(printf '\\377').wav\"", [directory.path])
        let status = await client.finish()
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertEqual(client.stdout, "go forward ten meters\n")
        // Relative to voicebox's own directory, and a headerless .raw file.
        try FileManager.default.copyItem(atPath: Recordings.path("goforward.raw"), toPath: directory.path + "/talk.raw")
        let relative = try ClientRun(stack, shell: "cd \"$1\" && exec \"$0\" listen --file talk.raw", [directory.path])
        let relativeStatus = await relative.finish()
        XCTAssertEqual(relativeStatus, 0, relative.stderr)
        XCTAssertEqual(relative.stdout, "go forward ten meters\n")
        let (missingStatus, missing) = try await voicebox(stack, ["listen", "--file", directory.path + "/none.wav"])
        XCTAssertEqual(missingStatus, 1)
        XCTAssertEqual(missing.stderr, "voicebox: cannot open \(directory.path)/none.wav: No such file or directory\n")
    }

    // @SoundServer: speech
    func testSayReadsStandardInputAndSpeaksLongTextInParts() async throws {
        let (stack, service) = classService()
        let said = try ClientRun(stack, ["say", "--json", "-"], input: Array("Read from standard input.".utf8))
        let saidStatus = await said.finish()
        XCTAssertEqual(saidStatus, 0, said.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(said.stdout.utf8)) as? [String: Any], said.stdout)
        XCTAssertEqual((object["ids"] as? [Int])?.count, 1)
        let empty = try ClientRun(stack, ["say", "-"], input: Array(" \n".utf8))
        let emptyStatus = await empty.finish()
        XCTAssertEqual(emptyStatus, 64, empty.stderr)
        XCTAssertEqual(empty.stderr, "voicebox: nothing to say: standard input was empty\n")

        // 150 KB: more than Speak takes at once (64 KiB), queued as three utterances in order.
        let long = String(repeating: "Voicebox speaks every sentence of this text in order. ", count: 2800)
        let queued = try ClientRun(stack, ["say", "--no-wait", "--volume", "0", "-"], input: Array(long.utf8))
        let queuedStatus = await queued.finish()
        XCTAssertEqual(queuedStatus, 0, queued.stderr)
        let ids = queued.stdout.split(separator: "\n").compactMap { UInt64($0) }
        XCTAssertEqual(ids.count, 3, queued.stdout)
        XCTAssertEqual(ids, ids.sorted())
        try await service.proxy.call(Speech1.stopAllSpeaking)
    }

    func testListenToAFileOnATerminalShowsAProgressBar() async throws {
        try Recordings.require()
        let (stack, _) = classService()
        let (status, client) = try await voicebox(stack, ["listen", "--file", Recordings.path("goforward.raw")], terminal: true)
        XCTAssertEqual(status, 0, client.stderr)
        let output = client.stdout
        XCTAssertTrue(output.contains("decoding ["), output.debugDescription)
        XCTAssertTrue(output.contains("100%"), output.debugDescription)
        // The bar's line is cleared before the result, which stays alone.
        XCTAssertTrue(output.hasSuffix("\r\u{1B}[Kgo forward ten meters\n"), output.debugDescription)
    }

    // @SoundServer: the microphone
    func testListenOnATerminalShowsALevelMeterAndThePartialText() async throws {
        try Recordings.require()
        let (stack, service) = classService()
        let wav = try Recordings.wav("goforward.raw", in: try makeTemporaryDirectory(self))
        let client = try ClientRun(stack, ["listen", "--partial"], terminal: true)
        _ = try await service.waitForNewRecognition(besides: [])
        try await service.waitForListening(true)
        let player = try Player(wav, sink: stack.micSink)
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

    // @SoundServer: speech
    func testMonitorPrintsTheSignalsOfASay() async throws {
        let (stack, _) = classService()
        let monitor = try ClientRun(stack, ["monitor"])
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

    func testStatusJSON() async throws {
        let (stack, _) = classService()
        let (status, client) = try await voicebox(stack, ["status", "--json"])
        XCTAssertEqual(status, 0, client.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(client.stdout.utf8)) as? [String: Any], client.stdout)
        XCTAssertEqual(object["running"] as? Bool, true)
        XCTAssertNotNil(object["version"] as? String)
        XCTAssertNotNil(object["voice_count"] as? Int, "a number (0 until the voice list has arrived)")
        XCTAssertEqual(object["listening"] as? Bool, false)
        XCTAssertEqual(object["paused"] as? Bool, false)
        XCTAssertNotNil(object["recognition_languages"] as? [String])
        let (plainStatus, plain) = try await voicebox(stack, ["status"])
        XCTAssertEqual(plainStatus, 0)
        XCTAssertTrue(plain.stdout.contains("is running"), plain.stdout)
    }

    // @SoundServer: the microphone
    func testAServiceErrorIsOneSentence() async throws {
        let (stack, _) = classService()
        let (status, client) = try await voicebox(stack, ["say", "--language", "xx", "hello"])
        XCTAssertEqual(status, 1)
        XCTAssertEqual(client.stderr, "voicebox: no voice speaks 'xx'\n", "the service's sentence, no D-Bus error name")
    }

    // MARK: Dictation across processes

    /// Starts `first` (a dictation), waits until the microphone is open, plays goforward into it
    /// and waits until it has been played (and decoded).
    private func dictateWhilePlaying(_ first: [String]) async throws -> (Stack, ServiceHarness, ClientRun) {
        try Recordings.require()
        let (stack, service) = classService()
        let directory = try makeTemporaryDirectory(self)
        let wav = try Recordings.wav("goforward.raw", in: directory)
        let dictation = try ClientRun(stack, first)
        _ = try await service.waitForNewRecognition(besides: [])
        try await service.waitForListening(true)
        let id = try await service.proxy.get(Speech1.listeningID)
        XCTAssertNotEqual(id, 0, "ListeningID names the dictation")
        let player = try Player(wav, sink: stack.micSink)
        await player.waitUntilDone()
        try await Task.sleep(for: .milliseconds(500))
        XCTAssertNil(dictation.process.poll(), "pauses do not end a dictation a key controls")
        return (stack, service, dictation)
    }

    // @SoundServer: the microphone
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

    // @SoundServer: the microphone
    func testDictatePushToTalk() async throws {
        let (stack, _, first) = try await dictateWhilePlaying(["dictate", "--start", "--literal"])
        let (releaseStatus, release) = try await voicebox(stack, ["dictate", "--stop"])
        XCTAssertEqual(releaseStatus, 0, release.stderr)
        let status = await first.finish()
        XCTAssertEqual(status, 0, first.stderr)
        XCTAssertEqual(first.stdout, "go forward ten meters\n")
    }

    // @SoundServer: the microphone
    func testShortcutsLeaveAnotherProgramsRecognitionAlone() async throws {
        let (stack, service) = classService()
        // Another program (not voicebox dictate) holds the microphone.
        let other = try ClientRun(stack, ["listen", "--max-seconds", "60"])
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
        let dictation = try ClientRun(stack, ["dictate", "--toggle", "--output", "stdout", "--no-cue"])
        let dictationID = try await service.waitForNewRecognition(besides: [id])
        try await waitUntil("DictationID") { (try? await service.property("DictationID"))?.uint64 == dictationID }
        let (cancelStatus, cancel) = try await voicebox(stack, ["dictate", "--cancel"])
        XCTAssertEqual(cancelStatus, 0, cancel.stderr)
        let dictationStatus = await dictation.finish()
        XCTAssertEqual(dictationStatus, 130)
        try await waitUntil("DictationID to be 0") { (try? await service.property("DictationID"))?.uint64 == 0 }
    }

    // @SoundServer: the microphone
    func testDictateCancelEndsTheFirstWithNoOutput() async throws {
        let (stack, service) = classService()
        let first = try ClientRun(stack, ["dictate", "--toggle"])
        _ = try await service.waitForNewRecognition(besides: [])
        let (cancelStatus, cancel) = try await voicebox(stack, ["dictate", "--cancel"])
        XCTAssertEqual(cancelStatus, 0, cancel.stderr)
        let status = await first.finish()
        XCTAssertEqual(status, 130)
        XCTAssertEqual(first.stdout, "")
        XCTAssertEqual(first.stderr, "")
    }
}

/// `voicebox` where no voiceboxd runs: usage errors and the service's absence, told once.
final class DictationWithoutServiceTests: XCTestCase {
    func testBadUsageAndNoService() async throws {
        let stack = try Stack.require()
        let (usage, bad) = try await voicebox(stack, ["listen", "--max-seconds", "soon"])
        XCTAssertEqual(usage, 64)
        XCTAssertTrue(bad.stderr.contains("--max-seconds takes a number, not 'soon'"), bad.stderr)
        XCTAssertEqual(bad.stdout, "")

        // No voiceboxd on the test bus (no harness started; the bus activates nothing).
        let (status, missing) = try await voicebox(stack, ["status", "--json"])
        XCTAssertEqual(status, 69, missing.stderr)
        XCTAssertEqual(missing.stdout, "{\"running\":false}\n")
        XCTAssertEqual(missing.stderr, "", "said once, on standard output")
        let (plainStatus, plain) = try await voicebox(stack, ["status"])
        XCTAssertEqual(plainStatus, 69)
        XCTAssertEqual(plain.stdout, "voiceboxd is not running (nothing owns org.voicebox.Speech1 on this bus)\n")
        XCTAssertEqual(plain.stderr, "")
        let (unreachableStatus, unreachable) = try await voicebox(stack, ["--address", "unix:path=/nonexistent/bus", "status"])
        XCTAssertEqual(unreachableStatus, 69)
        XCTAssertTrue(unreachable.stdout.hasPrefix("voiceboxd is not running: the session bus cannot be reached"), unreachable.stdout)
        XCTAssertEqual(unreachable.stderr, "")
        let (versionStatus, version) = try await voicebox(stack, ["--version"])
        XCTAssertEqual(versionStatus, 0)
        XCTAssertTrue(version.stdout.hasPrefix("voicebox "), version.stdout)
        let (sayStatus, say) = try await voicebox(stack, ["say", "hello"])
        XCTAssertEqual(sayStatus, 69)
        XCTAssertEqual(say.stderr, "voicebox: voiceboxd is not running (nothing owns org.voicebox.Speech1 on this bus)\n")
        let (noBus, _) = try await voicebox(stack, ["--address", "unix:path=/nonexistent/bus", "voices"])
        XCTAssertEqual(noBus, 69)
    }
}
