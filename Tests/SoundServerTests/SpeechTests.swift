@testable import TestSupport
import Foundation
import VoiceboxBus
import VoiceboxContract
import XCTest

/// Speak, StopSpeaking, ListVoices and friends against the real stack: a real dbus-daemon,
/// PulseAudio, speech-dispatcher and espeak-ng, with the sink's monitor as our ears. The tests share
/// one voiceboxd: each waits for the end of what it spoke and leaves no pause behind.
// What the sound server decides here: speech plays into the sound server; when it starts and ends is the server's doing
final class SpeechTests: ServiceTestCase {
    override class var sharesService: Bool { true }

    /// The sink's monitor, recording, once the sink has been silent for 0.3 s: the tests share
    /// speech-dispatcher and voiceboxd, and what the test before stopped may still be draining.
    private func quietEars() async throws -> MonitorRecorder {
        let ears = try stopsAtEnd(MonitorRecorder(device: stack.sink + ".monitor"))
        try await ears.waitUntilRecording()
        try await waitUntil("the sink to be silent", timeout: .seconds(30)) { ears.seconds > 0.3 && ears.rms(from: ears.seconds - 0.3) < 50 }
        return ears
    }

    /// Waits until the recording reaches `position` seconds (what the sink played until then is in it).
    private func record(_ ears: MonitorRecorder, until position: Double) async throws {
        try await waitUntil("\(position) s recorded", timeout: .seconds(30)) { ears.seconds >= position }
    }

    private func assertFinished(_ id: UInt64, _ reason: String, timeout: Duration = .seconds(20),
                                file: StaticString = #filePath, line: UInt = #line) async throws {
        let actual = try await service.waitForFinish(id, timeout: timeout)
        XCTAssertEqual(actual, reason, "utterance \(id): \(service.events(of: id))", file: file, line: line)
    }

    func testSpeakIsHeardOnTheSinkWithStartedThenFinished() async throws {
        let ears = try await quietEars()
        let before = ears.seconds
        let id = try await service.speak("Hello from Voicebox")
        XCTAssertGreaterThan(id, 0)
        let reason = try await service.waitForFinish(id)
        XCTAssertEqual(reason, "done")
        XCTAssertEqual(service.events(of: id), ["SpeechStarted", "SpeechFinished:done"])
        XCTAssertLessThan(ears.rms(from: before - 0.3, to: before), 50, "the sink should be silent before we speak")
        XCTAssertGreaterThan(ears.rms(from: before), 300, "speech should be audible on the sink")
    }

    func testWaitRepliesOnlyAfterTheAudioEnded() async throws {
        let ears = try await quietEars()
        let id = try await service.speak("Wait for me", ["wait": .boolean(true)])
        let replied = ears.offset(of: .now)
        XCTAssertTrue(service.events(of: id).contains("SpeechFinished:done"))
        try await record(ears, until: replied + 0.5)
        let lastLoud = try XCTUnwrap(ears.lastLoud(), "the utterance was never heard")
        // The reply must not come before the sound is over (a little slack for parec's latency).
        XCTAssertGreaterThan(replied + 0.1, lastLoud, "replied at \(replied) s, audio until \(lastLoud) s")
    }

    func testStopSpeakingCancelsALongUtteranceAndTheAudioStops() async throws {
        let ears = try await quietEars()
        let position = ears.seconds
        let id = try await service.speak(Texts.long)
        try await waitUntil("speech to be heard") { self.service.events(of: id).contains("SpeechStarted") && ears.firstLoud(after: position) != nil }
        let speaking = try await service.property("Speaking")
        XCTAssertEqual(speaking, .boolean(true))
        try await service.proxy.call(Speech1.stopSpeaking, id)
        let stoppedAt = ears.offset(of: .now)
        try await assertFinished(id, "cancelled")
        // The contract (docs/api.md): silent within 0.5 s of the answer; asserted with 3 times slack.
        try await record(ears, until: stoppedAt + 2.5)
        XCTAssertLessThan(ears.rms(from: stoppedAt + 1.5, to: stoppedAt + 2.5), 50, "audio should stop within 0.5 s of StopSpeaking")
        try await waitUntil("Speaking to turn false") { (try? await self.service.property("Speaking")) == .boolean(false) }
    }

    func testStopSpeakingZeroStopsEverythingTheCallerQueued() async throws {
        let first = try await service.speak(Texts.long)
        let second = try await service.speak(Texts.long)
        try await waitUntil("the first to start") { self.service.events(of: first).contains("SpeechStarted") }
        try await service.proxy.call(Speech1.stopSpeaking, 0)
        try await assertFinished(first, "cancelled")
        try await assertFinished(second, "cancelled")
        XCTAssertFalse(service.events(of: second).contains("SpeechStarted"), "a stopped queued utterance must not be spoken")
    }

    func testMessagesAreSpokenInOrder() async throws {
        let ids = [try await service.speak("one"), try await service.speak("two"), try await service.speak("three")]
        for id in ids { try await assertFinished(id, "done") }
        let starts = service.signals.filter { $0.member == "SpeechStarted" }.compactMap { $0.arguments.first?.uint64 }
        XCTAssertEqual(starts, ids)
    }

    func testImportantInterruptsAMessage() async throws {
        let message = try await service.speak(Texts.long)
        try await waitUntil("the message to start") { self.service.events(of: message).contains("SpeechStarted") }
        let important = try await service.speak("Important news", ["priority": .string("important")])
        try await assertFinished(important, "done")
        let messageEnd = try await service.waitForFinish(message, timeout: .seconds(30))
        XCTAssertEqual(messageEnd, "interrupted")
    }

    func testTextReplacesThePreviousText() async throws {
        let first = try await service.speak(Texts.long, ["priority": .string("text")])
        try await waitUntil("the first text to start") { self.service.events(of: first).contains("SpeechStarted") }
        let second = try await service.speak("Replacement", ["priority": .string("text")])
        try await assertFinished(first, "interrupted")
        try await assertFinished(second, "done")
    }

    func testEnglishVoicesAreListedAndOneOfThemSpeaks() async throws {
        let reply = try await service.call("ListVoices", [.string("en")])
        let voices = try XCTUnwrap(reply.first?.arrayElements)
        XCTAssertFalse(voices.isEmpty)
        for voice in voices {
            guard case .structure(let fields) = voice else { return XCTFail("voice is not a struct: \(voice)") }
            XCTAssertTrue(fields[2].string!.lowercased().hasPrefix("en"), "\(fields)")
        }
        let britishReply = try await service.call("ListVoices", [.string("en-GB")])
        let british = try XCTUnwrap(britishReply.first?.arrayElements)
        XCTAssertFalse(british.isEmpty)
        XCTAssertTrue(british.count < voices.count)
        guard case .structure(let best) = british[0] else { return XCTFail() }
        XCTAssertEqual(best[2].string?.lowercased(), "en-gb")

        let ears = try await quietEars()
        let position = ears.seconds
        let id = try await service.speak("Good evening", ["voice": best[0]])
        try await assertFinished(id, "done")
        XCTAssertNotNil(ears.firstLoud(after: position))
        let byLanguage = try await service.speak("Good evening", ["language": .string("en-GB"), "rate": .double(1.5),
                                                                  "pitch": .double(0.8), "volume": .double(0.9)])
        try await assertFinished(byLanguage, "done")
        let count = try await service.property("VoiceCount")?.uint32
        XCTAssertGreaterThan(try XCTUnwrap(count), 100)
    }

    func testSSMLMarksAreSignalled() async throws {
        let id = try await service.speak("<speak>Before the mark <mark name=\"here\"/> and after it.</speak>", ["ssml": .boolean(true)])
        try await assertFinished(id, "done")
        XCTAssertEqual(service.events(of: id), ["SpeechStarted", "SpeechMark:here", "SpeechFinished:done"])
    }

    func testBadInputGetsItsErrorAndTheServiceKeepsServing() async throws {
        let cases: [(String, [DBusValue], String)] = [
            ("Speak", [.string("x"), .vardict(["bogus": .string("1")])], "InvalidArgument"),
            ("Speak", [.string("x"), .vardict(["rate": .string("fast")])], "InvalidArgument"),
            ("Speak", [.string("x"), .vardict(["rate": .double(9)])], "InvalidArgument"),
            ("Speak", [.string("x"), .vardict(["volume": .double(-0.1)])], "InvalidArgument"),
            ("Speak", [.string("x"), .vardict(["priority": .string("urgent")])], "InvalidArgument"),
            ("Speak", [.string("x"), .vardict(["wait": .int32(1)])], "InvalidArgument"),
            ("Speak", [.string("x"), .vardict(["language": .string("not a tag")])], "InvalidArgument"),
            ("Speak", [.string("x"), .vardict(["voice": .string("a"), "language": .string("en")])], "InvalidArgument"),
            ("Speak", [.string("   "), .vardict([:])], "InvalidArgument"),
            ("Speak", [.string("x"), .vardict(["voice": .string("espeak-ng/No Such Voice")])], "UnknownVoice"),
            ("Speak", [.string("x"), .vardict(["language": .string("qq")])], "UnsupportedLanguage"),
            ("Speak", [.string(String(repeating: "a", count: 70_000)), .vardict([:])], "TooLarge"),
            ("ListVoices", [.string("e_n!")], "InvalidArgument"),
        ]
        for (member, arguments, expected) in cases {
            let name = await service.errorName(member, arguments)
            XCTAssertEqual(name, "org.voicebox.Error." + expected, "\(member) \(arguments.description.prefix(120))")
        }
        let wrongSignature = await service.errorName("Speak", [.string("only text")])
        XCTAssertEqual(wrongSignature, "org.freedesktop.DBus.Error.InvalidArgs")
        let id = try await service.speak("still here")
        try await assertFinished(id, "done")
    }

    /// Fire-and-forget speech outlives its caller (as with spd-say); StopSpeaking(0) from another
    /// caller leaves it alone, StopSpeaking(id) stops it whoever queued it.
    func testStopSpeakingByIdStopsAnyCallersUtteranceAndZeroOnlyTheCallersOwn() async throws {
        let other = try BusConnection(address: stack.busAddress)
        let id = try await Speech1.proxy(other).call(Speech1.speak, Texts.long, VarDict())
        await other.close()
        try await waitUntil("the utterance to start") { self.service.events(of: id).contains("SpeechStarted") }
        XCTAssertFalse(service.events(of: id).contains { $0.hasPrefix("SpeechFinished") })
        try await service.proxy.call(Speech1.stopSpeaking, 0)  // not ours: must not stop it
        try await Task.sleep(for: .milliseconds(300))  // a window in which a wrong stop would show
        XCTAssertFalse(service.events(of: id).contains { $0.hasPrefix("SpeechFinished") })
        try await service.proxy.call(Speech1.stopSpeaking, id)
        try await assertFinished(id, "cancelled", timeout: .seconds(10))
    }

    func testACallerWaitingForItsSpeechThatLeavesTheBusCancelsIt() async throws {
        let other = try BusConnection(address: stack.busAddress)
        let long = Texts.long
        let waiting = Task { @Sendable () async -> Void in
            _ = try? await other.call(destination: ServiceHarness.name, path: ServiceHarness.path, interface: ServiceHarness.interface,
                                      member: "Speak", arguments: [.string(long), .vardict(["wait": .boolean(true)])])
        }
        try await waitUntil("the waited-for utterance to start") {
            self.service.signals.contains { $0.member == "SpeechStarted" }
        }
        let id = try XCTUnwrap(service.signals.first { $0.member == "SpeechStarted" }?.arguments.first?.uint64)
        await other.close()
        try await assertFinished(id, "cancelled", timeout: .seconds(10))
        await waiting.value
    }

    func testPauseAndResume() async throws {
        let ears = try await quietEars()
        let position = ears.seconds
        let id = try await service.speak(Texts.long)
        try await waitUntil("speech to be heard") { self.service.events(of: id).contains("SpeechStarted") && ears.firstLoud(after: position) != nil }
        try await service.proxy.call(Speech1.pauseSpeaking)
        let pausedAt = ears.offset(of: .now)
        // The contract (docs/api.md): silent within 0.5 s of the answer; asserted with 3 times slack.
        try await record(ears, until: pausedAt + 2.5)
        XCTAssertLessThan(ears.rms(from: pausedAt + 1.5, to: pausedAt + 2.5), 50, "paused speech should be silent")
        XCTAssertFalse(service.events(of: id).contains { $0.hasPrefix("SpeechFinished") })
        try await service.proxy.call(Speech1.resumeSpeaking)
        let resumedAt = ears.offset(of: .now)
        try await waitUntil("speech to resume") { ears.firstLoud(after: resumedAt) != nil }
        try await service.proxy.call(Speech1.stopSpeaking, id)
        _ = try await service.waitForFinish(id)
    }
}
