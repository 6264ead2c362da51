import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import XCTest

/// Audio sessions against the real sound server of the stack (PulseAudio with or without
/// module-role-cork, or pipewire-pulse: VOICEBOX_SOUND_SERVER), a real MPRIS player (mpv with
/// mpv-mpris) and real streams (paplay, pacat): what a user would see in a volume control.
// What the sound server decides here: every test pauses, ducks, corks or mutes other audio and checks what the server shows
final class AudioSessionTests: ServiceTestCase {
    override class var mustLeaveNoJournal: Bool { true }
    override class var argumentsByTest: [String: [String]] {
        ["testACallCorksTheMicrophoneAndEndsARecognitionHeldTooLong": ["--bound", "call-limit=3"],
         "testAHungPlayerHoldsUpNoOtherPlayer": ["--bound", "player-answer=120"]]
    }

    /// Module-role-cork corks music and video streams where the stack's PulseAudio has it.
    static var serverCorks: Bool { ProcessInfo.processInfo.environment["VOICEBOX_SOUND_SERVER"] == "pulse-stock" }

    func interruptions() -> [(state: String, info: [String: DBusValue])] {
        service.signals.filter { $0.member == "AudioInterruption" }.map { signal in
            (signal.arguments.first?.string ?? "", signal.arguments.dropFirst().first?.vardictEntries ?? [:])
        }
    }

    func waitForInterruption(_ state: String, count: Int = 1, timeout: Duration = .seconds(10)) async throws -> [String: DBusValue] {
        try await waitUntil("AudioInterruption \(state) #\(count)", timeout: timeout) {
            self.interruptions().filter { $0.state == state }.count >= count
        }
        return interruptions().filter { $0.state == state }[count - 1].info
    }

    func player() async throws -> MPVPlayer {
        let mpv = try await MPVPlayer(sink: stack.sink, bus: service.client)
        addTeardownBlock { await mpv.stop() }
        return mpv
    }

    func stream(role: String?) async throws -> PlayingStream {
        let stream = try PlayingStream(sink: stack.sink, role: role)
        addTeardownBlock { await stream.stop() }
        _ = try await stream.waitUntilListed()
        return stream
    }

    /// others=pause: mpv is paused over MPRIS and plays again after; a music stream is corked by
    /// the server (PulseAudio with module-role-cork) or muted by Voicebox, and restored; a stream
    /// without a role is muted and restored. Began and ended say what was done.
    func testPausePausesThePlayerSilencesStreamsAndRestoresThem() async throws {
        let mpv = try await player()
        let music = try await stream(role: "music")
        let browser = try await stream(role: nil)
        let id = try await service.speak(Texts.long, ["others": .string("pause")])
        let began = try await waitForInterruption("began")
        XCTAssertEqual(began["reason"], .string("speaking"))
        XCTAssertEqual(began["id"], .uint64(id))
        XCTAssertEqual(began["paused_players"], .stringArray([mpv.name]))
        let pausedStatus = await mpv.status(on: service.client)
        XCTAssertEqual(pausedStatus, "Paused")
        XCTAssertEqual(browser.state?.muted, true)
        if Self.serverCorks {
            XCTAssertEqual(began["corked_streams"], .uint32(1))
            XCTAssertEqual(began["muted_streams"], .uint32(1))
            try await waitUntil("the server to cork the music") { music.state?.corked == true }
        } else {
            XCTAssertEqual(began["corked_streams"], .uint32(0))
            XCTAssertEqual(began["muted_streams"], .uint32(2))
            XCTAssertEqual(music.state?.muted, true)
        }
        let interrupted = try await service.proxy.get(Speech1.interrupted)
        XCTAssertTrue(interrupted)

        try await service.proxy.call(Speech1.stopSpeaking, id)
        let ended = try await waitForInterruption("ended")
        XCTAssertEqual(ended["should_resume"], .boolean(true))
        XCTAssertEqual(ended["id"], .uint64(id))
        try await waitUntil("mpv to play again") { await mpv.status(on: self.service.client) == "Playing" }
        XCTAssertEqual(browser.state?.muted, false)
        XCTAssertEqual(music.state?.muted, false)
        XCTAssertEqual(music.state?.corked, false)
        XCTAssertEqual(interruptions().map(\.state), ["began", "ended"])
        let after = try await service.proxy.get(Speech1.interrupted)
        XCTAssertFalse(after)
    }

    /// A user who plays and pauses the player during the speech finds it paused afterwards. (Each
    /// press is followed by the player's announcement of it, which voiceboxd is sent too; the
    /// players are resumed before `ended` goes out.)
    func testAPlayerTheUserTouchedMeanwhileIsLeftAsTheUserLeftIt() async throws {
        let mpv = try await player()
        let id = try await service.speak(Texts.long, ["others": .string("pause")])
        _ = try await waitForInterruption("began")
        let announced = try await mpv.announcedStatuses(on: service.client)
        try await mpv.press("Play", on: service.client)
        try await waitUntil("mpv to announce Playing") { announced.value.contains("Playing") }
        try await mpv.press("Pause", on: service.client)
        try await waitUntil("mpv to announce Paused") { announced.value.last == "Paused" }
        try await service.proxy.call(Speech1.stopSpeaking, id)
        _ = try await waitForInterruption("ended")
        let status = await mpv.status(on: service.client)
        XCTAssertEqual(status, "Paused")
    }

    /// others=duck (Speak's default): streams drop by 15 dB as heard (what pactl shows in dB; the
    /// recording's level is AudioTraceTests') and come back exactly; a volume the user moved
    /// meanwhile is kept.
    func testDuckLowersStreamsBy15dBAndRestoresExactlyWhatTheUserLeftAlone() async throws {
        let first = try await stream(role: "music")
        let second = try await stream(role: nil)
        let id = try await service.speak(Texts.long)
        let began = try await waitForInterruption("began")
        XCTAssertEqual(began["ducked_streams"], .uint32(2))
        for stream in [first, second] {
            let volume = try XCTUnwrap(stream.state?.volume)
            XCTAssertEqual(volume.count, 2)
            for channel in volume { XCTAssertEqual(decibels(channel), -15, accuracy: 0.1, "\(volume)") }
        }
        _ = try ServerStream.run("/usr/bin/pactl", ["set-sink-input-volume", String(second.state!.index), "30000"])
        try await service.proxy.call(Speech1.stopSpeaking, id)
        _ = try await waitForInterruption("ended")
        XCTAssertEqual(first.state?.volume, [65536, 65536])
        XCTAssertEqual(second.state?.volume, [30000, 30000], "the user's volume is kept")
    }

    /// A run of utterances is one interruption, not one per utterance.
    func testConsecutiveUtterancesAreOneInterruption() async throws {
        _ = try await stream(role: nil)
        var ids: [UInt64] = []
        // Each long enough that the next Speak comes while the one before is still heard, also
        // when the machine is slow (a sanitizer, CI's two cores).
        let texts = ["One, and the first sentence of three.", "Two, and the second sentence of three.", "Three, the last one."]
        for text in texts { ids.append(try await service.speak(text, ["others": .string("pause")])) }
        for id in ids { _ = try await service.waitForFinish(id) }
        // Once all three are over, others come back after the grace: every interruption begun has ended.
        try await waitUntil("every interruption to end") {
            let states = self.interruptions().map(\.state)
            return states.last == "ended" && states.filter { $0 == "began" }.count == states.filter { $0 == "ended" }.count
        }
        XCTAssertEqual(interruptions().map(\.state), ["began", "ended"])
    }

    /// A call (a phone-role stream) holds the speech, which starts again once it ends.
    func testACallHoldsSpeechUntilItEnds() async throws {
        let ears = try stopsAtEnd(MonitorRecorder(device: stack.sink + ".monitor"))
        try await ears.waitUntilRecording()
        let id = try await service.speak(Texts.long, ["others": .string("mix")])
        try await waitUntil("speech to be heard") { ears.firstLoud() != nil }
        let call = try PlayingStream(callOn: stack.sink)
        addTeardownBlock { await call.stop() }
        let began = try await waitForInterruption("began")
        XCTAssertEqual(began["reason"], .string("external"))
        XCTAssertEqual(began["id"], .uint64(0))
        let speaking = try await service.proxy.get(Speech1.speaking)
        XCTAssertFalse(speaking, "nothing is spoken while the call holds speech")
        let interrupted = try await service.proxy.get(Speech1.interrupted)
        XCTAssertTrue(interrupted)
        let heldAt = ears.latestPosition
        // The contract (docs/audio-sessions.md): silent within 0.5 s of the call's `began`; 3 times slack.
        try await waitUntil("2.5 s of the call recorded") { ears.seconds >= heldAt + 2.5 }
        XCTAssertLessThan(ears.rms(from: heldAt + 1.5, to: heldAt + 2.5), 50, "speech is held during the call")
        XCTAssertFalse(service.events(of: id).contains { $0.hasPrefix("SpeechFinished") })
        await call.stop()
        let ended = try await waitForInterruption("ended")
        XCTAssertEqual(ended["reason"], .string("external"))
        XCTAssertEqual(ended["should_resume"], .boolean(true))
        let resumedAt = ears.latestPosition
        try await waitUntil("speech to resume") { ears.firstLoud(after: resumedAt) != nil }
        let speakingAgain = try await service.proxy.get(Speech1.speaking)
        XCTAssertTrue(speakingAgain)
        try await service.proxy.call(Speech1.stopSpeaking, id)
    }

    /// A call corks the microphone while it lasts and uncorks it after; one that lasts past the
    /// limit ends the recognition with what it heard (reason interrupted).
    func testACallCorksTheMicrophoneAndEndsARecognitionHeldTooLong() async throws {
        let recognition = Task { [service] in
            try await service!.proxy.call(Speech1.recognize, VarDict(["others": .string("mix"), "max_seconds": .double(30)]),
                                          timeout: .seconds(40))
        }
        // A give-up, not a speed: the first microphone recognition loads the model (over 10 s was
        // seen under ThreadSanitizer on a loaded machine).
        try await waitUntil("the microphone to open", timeout: .seconds(30)) { self.service.signals.contains { $0.member == "RecognitionStarted" } }
        let pid = service.daemon.pid
        try await waitUntil("our recording to be listed") { (try? ServerStream.recording(of: pid)) != nil }
        XCTAssertEqual(try ServerStream.recording(of: pid)?.corked, false)
        let shortCall = try PlayingStream(callOn: stack.sink)
        addTeardownBlock { await shortCall.stop() }
        _ = try await waitForInterruption("began")
        try await waitUntil("the microphone to be corked") { (try? ServerStream.recording(of: pid))?.corked == true }
        await shortCall.stop()
        _ = try await waitForInterruption("ended")
        try await waitUntil("the microphone to record again") { (try? ServerStream.recording(of: pid))?.corked == false }

        let call = try PlayingStream(callOn: stack.sink)
        addTeardownBlock { await call.stop() }
        _ = try await waitForInterruption("began", count: 2)
        try await waitUntil("the microphone to be corked") { (try? ServerStream.recording(of: pid))?.corked == true }
        let reply = try await recognition.value
        XCTAssertEqual(reply.details["reason"], .string("interrupted"))
        XCTAssertNil(try ServerStream.recording(of: pid), "the microphone is released")
    }

    /// A player that plays but never answers Pause (its name sorts before mpv's); its Pause call
    /// is kept unanswered until `hung` closes.
    func hungPlayer() async throws -> BusConnection {
        let hung = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await hung.close() }
        let never = BusMethod("Pause", "Never answers.")
        let status = BusProperty("PlaybackStatus", "Always Playing.", String.self)
        let interface = InterfaceDescription(name: "org.mpris.MediaPlayer2.Player", methods: [never.description],
                                             properties: [status.description])
        let object = try hung.export(path: "/org/mpris/MediaPlayer2", interface: interface,
                                     handlers: [never.deferredHandler { responder in
                                         // Kept, never answered, until the connection closes.
                                         Task { try? await Task.sleep(for: .seconds(120)); _ = responder }
                                     }])
        object.set(status, "Playing")
        let owned = try await hung.requestName("org.mpris.MediaPlayer2.hung")
        XCTAssertEqual(owned, .primaryOwner)
        return hung
    }

    /// A player that never answers holds up no other: with its bound made long (player-answer 120 s),
    /// mpv is paused while the hung player's Pause is still unanswered (no `began` yet); once the
    /// hung player leaves the bus its call fails, and `began` names mpv alone.
    func testAHungPlayerHoldsUpNoOtherPlayer() async throws {
        let mpv = try await player()
        let hung = try await hungPlayer()
        let speaking = Task { [service] in try await service!.speak(Texts.long, ["others": .string("pause")]) }
        try await waitUntil("mpv to be paused") { await mpv.status(on: self.service.client) == "Paused" }
        XCTAssertEqual(interruptions().map(\.state), [], "the hung player's Pause is still unanswered")
        await hung.close()
        let began = try await waitForInterruption("began")
        XCTAssertEqual(began["paused_players"], .stringArray([mpv.name]), "the hung player did not pause")
        let id = try await speaking.value
        try await service.proxy.call(Speech1.stopSpeaking, id)
        _ = try await waitForInterruption("ended")
    }

    /// A player that never answers is given up at its bound (player-answer, 0.5 s): the
    /// interruption begins while it still holds its Pause, with mpv paused and the hung one not.
    func testAHungPlayerIsGivenUpAtItsBound() async throws {
        let mpv = try await player()
        _ = try await hungPlayer()
        _ = try await service.speak(Texts.long, ["others": .string("pause")])
        let began = try await waitForInterruption("began")
        XCTAssertEqual(began["paused_players"], .stringArray([mpv.name]), "the hung player did not pause")
        let mpvStatus = await mpv.status(on: service.client)
        XCTAssertEqual(mpvStatus, "Paused")
    }

    /// voiceboxd killed while music is paused and muted: the next one restores both.
    /// A stream of a client named Voicebox (the `voicebox` client plays its dictation cues so,
    /// `Cue.paplayArguments`) plays on while others are silenced; another client's does not.
    func testVoiceboxsOwnCuesAreNotSilenced() async throws {
        let cue = try PlayingStream(sink: stack.sink, role: "event", application: "Voicebox")
        let other = try PlayingStream(sink: stack.sink, role: "event")
        addTeardownBlock { await cue.stop(); await other.stop() }
        _ = try await cue.waitUntilListed()
        _ = try await other.waitUntilListed()
        let id = try await service.speak(Texts.long, ["others": .string("pause")])
        _ = try await waitForInterruption("began")
        try await waitUntil("the other client's stream to be silenced") {
            other.state.map { $0.muted || $0.corked } ?? false
        }
        XCTAssertEqual(cue.state?.muted, false, "Voicebox's own cue is never muted")
        XCTAssertEqual(cue.state?.corked, false)
        _ = try await service.call("StopSpeaking", [.uint64(id)])
    }

    func testAVoiceboxdKilledMidInterruptionIsCleanedUpAfterByTheNext() async throws {
        let mpv = try await player()
        let browser = try await stream(role: nil)
        _ = try await service.speak(Texts.long, ["others": .string("pause")])
        _ = try await waitForInterruption("began")
        XCTAssertEqual(browser.state?.muted, true)
        service.daemon.signal(SIGKILL)
        _ = await service.daemon.wait()
        let stillPaused = await mpv.status(on: service.client)
        XCTAssertEqual(stillPaused, "Paused")
        XCTAssertEqual(browser.state?.muted, true, "nobody restored it: the daemon is gone")
        await service.stop()
        service = try await ServiceHarness(stack: stack)
        try await waitUntil("the next voiceboxd to unmute the stream") { browser.state?.muted == false }
        try await waitUntil("the next voiceboxd to play the player again") { await mpv.status(on: self.service.client) == "Playing" }
    }
}
