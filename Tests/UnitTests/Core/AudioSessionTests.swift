@testable import TestSupport
import Foundation
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads
import XCTest

/// The audio-session policy over a scripted sound server and players, on a clock the test moves:
/// what is paused, muted, ducked and corked, what is restored (and what the user changed meanwhile
/// is kept), the signals, calls interrupting Voicebox, and recovery from a journal a crash left.
/// The server's memory (AudioSessionMemoryTests) has its own file.
class AudioSessionTestCase: XCTestCase {
    static let ownPID: Int32 = 4242
    var journal: MemoryJournal!
    var mixer: ScriptedMixer!
    var players: ScriptedPlayers!
    var bus: RecordingBus!
    var clock: TestClock!
    var session: AudioSession!
    var follower: Task<Void, Never>?
    let logged = Locked<[String]>([])

    static let pulse = SoundServerInfo(name: "pulseaudio", version: "16.1", isPipeWire: false, memory: .readWrite)
    static let pipewire = SoundServerInfo(name: "PulseAudio (on PipeWire 0.3.65)", version: "15.0.0", isPipeWire: true, memory: .writeOnly)

    func makeSession(info: SoundServerInfo = .init(name: "pulseaudio", version: "16.1", isPipeWire: false),
                     grace: Duration = .milliseconds(300), duckDecibels: Double = -15, bounds: Bounds = Bounds()) async {
        journal = journal ?? MemoryJournal()
        mixer = ScriptedMixer(info: info, journal: journal)
        players = players ?? ScriptedPlayers()
        bus = RecordingBus()
        clock = TestClock()
        var settings = AudioSessionSettings()
        settings.grace = grace
        settings.duckDecibels = duckDecibels
        let logged = logged
        session = AudioSession(mixer: mixer, players: players, journal: journal, bus: bus, settings: settings, bounds: bounds,
                               ownProcessID: Self.ownPID, clock: clock, log: { line in logged.withLock { $0.append(line) } })
        let session = session!
        await session.start()
        follower = Task { await session.run() }
    }

    override func tearDown() async throws {
        follower?.cancel()
    }

    /// voiceboxd is killed: once this returns the session handles nothing more. Cancelling alone
    /// is not enough, since an input already taken is still handled (a memory write-back, say).
    func killSession() async {
        follower?.cancel()
        await follower?.value
    }

    /// totem at its user's level, ducked, closed mid-duck; WirePlumber saves the ducked level late,
    /// then falls behind before the end; `then` passes after the end (the put-back fails at the
    /// 0.3 s grace).
    func duckWithWirePlumberBehind(level: UInt32 = 20000, bounds: Bounds = Bounds(), then: Duration = .seconds(1)) async {
        await makeSession(info: Self.pipewire, bounds: bounds)
        mixer.play(PlaybackStream(id: 2, applicationName: "totem", processID: 200, volume: [level, level]))
        await pass(.seconds(3))
        await session.begin(.speaking, id: 1, policy: .duck)
        mixer.remove(2)
        await settled()
        let ducked = mixer.attenuate([level, level], byDecibels: -15)
        mixer.setMemory(RememberedSetting(name: "sink-input-by-application-name:totem", volume: ducked, channelMap: [1, 2]))
        mixer.fallBehind()
        await session.end(.speaking, id: 1)
        await pass(then)
    }

    /// The music player (pid 100, paused over MPRIS), a browser tab (no player: muted), speech-dispatcher
    /// and Voicebox's own stream (never touched), and a corked browser tab.
    func setUpDesktop() async throws {
        players.add("org.mpris.MediaPlayer2.mpv", owner: ":1.7", pid: 100)
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100, role: "music"))
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200, role: nil))
        mixer.play(PlaybackStream(id: 3, applicationName: "speech-dispatcher-espeak-ng", processID: 300))
        mixer.play(PlaybackStream(id: 4, applicationName: "Voicebox", processID: Self.ownPID))
        mixer.play(PlaybackStream(id: 5, applicationName: "Firefox", processID: 200, corked: true))
        await settled()
    }

    /// The session has handled every event and timer so far: no real time passes. What the session
    /// does may make the mixer send more events (a stream it mutes changes): settled is when every
    /// event sent has reached the session's input and a drain after that set off no new one.
    func settled() async {
        for _ in 0..<1_000 {
            var turns = 0
            while !mixer.allTaken, turns < 100_000 {
                await Task.yield()
                turns += 1
            }
            // Under ThreadSanitizer on a loaded machine the events' hop can outlast any count of
            // yields: then a give-up bound, which is no assertion of speed.
            if !mixer.allTaken {
                let mixer = mixer!
                try? await waitUntil("the session to take the mixer's events", timeout: .seconds(30)) { mixer.allTaken }
                guard mixer.allTaken else { break }
            }
            let sent = mixer.sentCount
            await session.drain()
            if mixer.allTaken, mixer.sentCount == sent { return }
        }
        XCTFail("the session did not take the mixer's events")
    }

    /// Time passes (timers fire), then everything it set off is handled.
    func pass(_ duration: Duration) async {
        await settled()
        clock.advance(by: duration)
        await settled()
    }

    func interruptions() -> [(InterruptionState, InterruptionInfo)] {
        bus.signals.compactMap { if case .audioInterruption(let state, let info) = $0 { (state, info) } else { nil } }
    }

    /// libpulse's arithmetic for -15 dB (pa_sw_volume_from_dB, pa_sw_volume_multiply).
    static let minus15 = UInt32(36854)
}

final class AudioSessionTests: AudioSessionTestCase {
    func testPausePausesPlayersMutesTheRestAndRestoresExactly() async throws {
        await makeSession()
        try await setUpDesktop()
        await session.begin(.speaking, id: 9, policy: .pause)
        XCTAssertEqual(players.status("org.mpris.MediaPlayer2.mpv"), "Paused")
        XCTAssertEqual(mixer.changes, ["mute 2 true"], "only the browser: the player pauses itself; ours, speechd's and corked streams are left alone")
        XCTAssertEqual(mixer.unjournaled, [], "every change is journaled before it is made")
        let began = try XCTUnwrap(interruptions().first)
        XCTAssertEqual(began.0, .began)
        XCTAssertEqual(began.1, InterruptionInfo(reason: .speaking, id: 9, pausedPlayers: ["org.mpris.MediaPlayer2.mpv"], mutedStreams: 1))
        let interrupted = await session.isInterrupted
        XCTAssertTrue(interrupted)

        await session.end(.speaking, id: 9)
        await pass(.milliseconds(299))
        XCTAssertEqual(mixer.changes, ["mute 2 true"], "others stay interrupted for the grace")
        await pass(.milliseconds(1))
        XCTAssertEqual(mixer.changes, ["mute 2 true", "mute 2 false"])
        XCTAssertEqual(players.status("org.mpris.MediaPlayer2.mpv"), "Playing")
        XCTAssertEqual(interruptions().last?.0, .ended)
        XCTAssertEqual(interruptions().last?.1.shouldResume, true)
        XCTAssertNil(journal.current, "the journal is cleared once all is restored")
        XCTAssertEqual(bus.properties.filter { if case .interrupted = $0 { true } else { false } },
                       [.interrupted(false), .interrupted(true), .interrupted(false)])
    }

    func testWhatTheUserChangedMeanwhileKeepsTheUsersSetting() async throws {
        await makeSession()
        try await setUpDesktop()
        mixer.play(PlaybackStream(id: 6, applicationName: "Chromium", processID: 600))
        await settled()
        await session.begin(.listening, id: 1, policy: .pause)
        players.set("org.mpris.MediaPlayer2.mpv", status: "Paused")  // still paused: will be played again
        mixer.userSets(2, muted: false)  // the user wants the browser back now
        players.add("org.mpris.MediaPlayer2.other", owner: ":1.9", status: "Stopped", pid: 700)
        await settled()
        await session.end(.listening, id: 1)
        await pass(.seconds(1))
        XCTAssertFalse(mixer.changes.contains("mute 2 false"), "the user unmuted it: nothing to undo")
        XCTAssertTrue(mixer.changes.contains("mute 6 false"))
        XCTAssertEqual(mixer.stream(2)?.muted, false)
    }

    func testAPlayerTheUserPausedOrThatRestartedIsNotPlayedAgain() async throws {
        await makeSession()
        try await setUpDesktop()
        await session.begin(.speaking, id: 2, policy: .pause)
        players.set("org.mpris.MediaPlayer2.mpv", owner: ":1.99")  // restarted: another owner
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertFalse(players.calls.contains("play org.mpris.MediaPlayer2.mpv"))
    }

    /// -15 dB as heard: on PulseAudio's cubic scale 65536 becomes 36854 (not 11654, which is -45 dB).
    func testDuckLowersOthersByTheDecibelsAsHeardAndRestoresOnlyVolumesTheUserLeftAlone() async throws {
        await makeSession()
        try await setUpDesktop()
        mixer.play(PlaybackStream(id: 7, applicationName: "vlc", processID: 700, volume: [40000, 40000]))
        await settled()
        await session.begin(.speaking, id: 3, policy: .duck)
        XCTAssertEqual(mixer.stream(1)?.volume, [Self.minus15, Self.minus15])
        let heard = 20 * log10(pow(Double(Self.minus15) / 65536, 3))
        XCTAssertEqual(heard, -15, accuracy: 0.01)
        let seven = try XCTUnwrap(mixer.stream(7)?.volume.first)
        XCTAssertEqual(60 * log10(Double(seven) / 40000), -15, accuracy: 0.01, "-15 dB from the stream's own level")
        XCTAssertEqual(interruptions().first?.1.duckedStreams, 3, "mpv, the browser and vlc; players are not paused by duck")
        XCTAssertEqual(players.calls, [])
        mixer.userSets(7, volume: [30000, 30000])
        await settled()
        await session.end(.speaking, id: 3)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(1)?.volume, [65536, 65536])
        XCTAssertEqual(mixer.stream(2)?.volume, [65536, 65536])
        XCTAssertEqual(mixer.stream(7)?.volume, [30000, 30000], "the user's volume is kept")
    }

    func testDuckDepthFollowsTheSetting() async throws {
        for depth in [-6.0, -30.0] {
            journal = nil
            await makeSession(duckDecibels: depth)
            mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100))
            await settled()
            await session.begin(.speaking, id: 1, policy: .duck)
            let volume = try XCTUnwrap(mixer.stream(1)?.volume.first)
            XCTAssertEqual(60 * log10(Double(volume) / 65536), depth, accuracy: 0.01)
            follower?.cancel()
        }
    }

    /// A dictation during a ducked reply: the pause joins the interruption in progress, the ducked
    /// stream is muted too, and both come back at the end; one began, one ended.
    func testAPauseJoiningADuckSilencesTheDuckedStreamsToo() async throws {
        await makeSession()
        try await setUpDesktop()
        await session.begin(.speaking, id: 1, policy: .duck)
        await session.begin(.listening, id: 2, policy: .pause)
        XCTAssertEqual(mixer.stream(2)?.muted, true)
        XCTAssertEqual(players.status("org.mpris.MediaPlayer2.mpv"), "Paused")
        await session.end(.listening, id: 2)
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(2)?.muted, false)
        XCTAssertEqual(mixer.stream(2)?.volume, [65536, 65536])
        XCTAssertEqual(interruptions().map(\.0), [.began, .ended])
    }

    func testMixLeavesEverythingAloneAndSaysNothing() async throws {
        await makeSession()
        try await setUpDesktop()
        await session.begin(.speaking, id: 4, policy: .mix)
        await session.end(.speaking, id: 4)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.changes, [])
        XCTAssertTrue(interruptions().isEmpty)
    }

    func testARunOfUtterancesIsOneInterruption() async throws {
        await makeSession(grace: .milliseconds(200))
        try await setUpDesktop()
        await session.begin(.speaking, id: 1, policy: .pause)
        await session.begin(.speaking, id: 2, policy: .pause)
        await session.end(.speaking, id: 1)
        await session.end(.speaking, id: 2)
        await pass(.milliseconds(50))
        await session.begin(.speaking, id: 3, policy: .pause)  // within the grace
        await session.end(.speaking, id: 3)
        await pass(.milliseconds(199))
        XCTAssertEqual(interruptions().map(\.0), [.began])
        await pass(.milliseconds(1))
        XCTAssertEqual(interruptions().map(\.0), [.began, .ended])
        XCTAssertEqual(mixer.changes, ["mute 2 true", "mute 2 false"])
        XCTAssertEqual(players.calls, ["pause org.mpris.MediaPlayer2.mpv", "play org.mpris.MediaPlayer2.mpv"])
    }

    /// A journal that cannot be written (a full $XDG_RUNTIME_DIR): nothing is paused, muted or
    /// ducked, since a crash would leave it so for good; the interruption is still announced,
    /// saying it changed nothing, and the next one, once the journal can be written, works again.
    func testNothingIsChangedThatCannotBeJournaled() async throws {
        await makeSession()
        try await setUpDesktop()
        journal.full.withLock { $0 = true }
        await session.begin(.speaking, id: 9, policy: .pause)
        mixer.play(PlaybackStream(id: 8, applicationName: "totem", processID: 800, role: "video"))
        await settled()
        XCTAssertEqual(mixer.changes, [])
        XCTAssertEqual(players.status("org.mpris.MediaPlayer2.mpv"), "Playing")
        XCTAssertEqual(interruptions().first?.1, InterruptionInfo(reason: .speaking, id: 9, pausedPlayers: []))
        XCTAssertEqual(logged.withLock { $0.filter { $0.hasPrefix("cannot write the interruption journal") }.count }, 1,
                       "said once, not at every change: \(logged.withLock { $0 })")
        await session.end(.speaking, id: 9)
        await pass(.seconds(1))
        XCTAssertEqual(interruptions().map(\.0), [.began, .ended])

        journal.full.withLock { $0 = false }
        await session.begin(.speaking, id: 10, policy: .duck)
        XCTAssertEqual(mixer.changes.count, 3, "the player's, the browser's and totem's streams are ducked: \(mixer.changes)")
        XCTAssertEqual(mixer.unjournaled, [])
    }

    func testAStreamThatStartsDuringThePauseIsSilencedToo() async throws {
        await makeSession()
        try await setUpDesktop()
        await session.begin(.listening, id: 5, policy: .pause)
        mixer.play(PlaybackStream(id: 8, applicationName: "totem", processID: 800, role: "video"))
        await settled()
        XCTAssertEqual(mixer.stream(8)?.muted, true)
        await session.end(.listening, id: 5)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(8)?.muted, false)
    }

    /// A request the server refuses is logged with the stream it concerns, and the rest goes on.
    func testAMixerFailureIsLoggedWithItsStream() async throws {
        await makeSession()
        try await setUpDesktop()
        mixer.fail("mute")
        await session.begin(.speaking, id: 1, policy: .pause)
        let lines = logged.withLock { $0 }
        XCTAssertTrue(lines.contains { $0.hasPrefix("cannot mute stream 2 (Firefox, pid 200): ") }, "\(lines)")
        XCTAssertEqual(players.status("org.mpris.MediaPlayer2.mpv"), "Paused", "the players are paused all the same")
    }

    /// With module-role-cork the server corks the music and video streams itself (their clients
    /// are asked to pause); the rest is muted.
    func testRoleCorkDoesTheCorkingWherePulseAudioHasIt() async throws {
        await makeSession(info: .init(name: "pulseaudio", version: "16.1", isPipeWire: false,
                                      roleCorkTriggers: ["phone"], roleCorkTargets: ["music", "video"]))
        mixer.play(PlaybackStream(id: 1, applicationName: "paplay", processID: 100, role: "music"))
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200))
        await settled()
        await session.begin(.speaking, id: 1, policy: .pause)
        XCTAssertEqual(mixer.changes, ["trigger phone", "mute 2 true"])
        XCTAssertEqual(interruptions().first?.1.corkedStreams, 1)
        XCTAssertEqual(interruptions().first?.1.mutedStreams, 1)
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.changes, ["trigger phone", "mute 2 true", "mute 2 false", "trigger off"])
    }

    /// Module-role-cork (not loaded global) acts on the trigger's sink only: a music stream on
    /// another sink is muted by Voicebox instead.
    func testAStreamTheModuleDidNotCorkIsMuted() async throws {
        await makeSession(info: .init(name: "pulseaudio", version: "16.1", isPipeWire: false,
                                      roleCorkTriggers: ["phone"], roleCorkTargets: ["music", "video"]))
        mixer.play(PlaybackStream(id: 1, applicationName: "paplay", processID: 100, role: "music"))
        mixer.play(PlaybackStream(id: 3, applicationName: "rhythmbox", processID: 300, role: "music"))
        mixer.onAnotherSink(3)
        await settled()
        await session.begin(.speaking, id: 1, policy: .pause)
        XCTAssertEqual(mixer.changes, ["trigger phone", "mute 3 true"])
        XCTAssertEqual(interruptions().first?.1.corkedStreams, 1)
        XCTAssertEqual(interruptions().first?.1.mutedStreams, 1)
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(3)?.muted, false)
        XCTAssertEqual(mixer.stream(1)?.corked, false)
    }

    func testPipeWireIsNeverAskedToCork() async throws {
        await makeSession(info: .init(name: "PulseAudio (on PipeWire 0.3.65)", version: "15.0.0", isPipeWire: true,
                                      roleCorkTriggers: ["phone"], roleCorkTargets: ["music"]))
        mixer.play(PlaybackStream(id: 1, applicationName: "paplay", processID: 100, role: "music"))
        await settled()
        await session.begin(.speaking, id: 1, policy: .pause)
        XCTAssertEqual(mixer.changes, ["mute 1 true"])
    }

    /// A call (a phone-role stream, playing or recording) holds Voicebox's work until it ends.
    func testACallInterruptsVoiceboxUntilItEnds() async throws {
        await makeSession()
        let target = RecordingTarget()
        await session.add(target)
        mixer.play(PlaybackStream(id: 20, applicationName: "Voicebox", processID: Self.ownPID, role: "phone"))  // our own trigger
        await settled()
        XCTAssertEqual(target.events, [])
        mixer.play(PlaybackStream(id: 21, applicationName: "Zoom", processID: 900, role: "phone"))
        mixer.record(RecordingStream(id: 22, applicationName: "Zoom", processID: 900, role: "Communication"))
        await settled()
        XCTAssertEqual(target.events, ["began"])
        XCTAssertEqual(interruptions().map(\.1.reason), [.external])
        mixer.remove(21)
        await settled()
        XCTAssertEqual(target.events, ["began"], "the call still records")
        mixer.record(RecordingStream(id: 22, applicationName: "Zoom", processID: 900, role: "Communication", corked: true))
        await settled()
        XCTAssertEqual(target.events, ["began", "ended"])
        XCTAssertEqual(interruptions().last?.0, .ended)
        XCTAssertEqual(interruptions().last?.1.shouldResume, true)
        XCTAssertEqual(interruptions().last?.1.id, 0)
    }

    /// A call holds what Voicebox took from others: an activity that ends during the call (a
    /// recognition ended by the call limit, a StopSpeaking) gives nothing back until the call ends.
    func testNothingIsGivenBackWhileACallIsActive() async throws {
        await makeSession()
        try await setUpDesktop()
        await session.begin(.listening, id: 7, policy: .pause)
        mixer.play(PlaybackStream(id: 21, applicationName: "Zoom", processID: 900, role: "phone"))
        await settled()
        await session.end(.listening, id: 7)
        await pass(.seconds(30))
        XCTAssertEqual(mixer.stream(2)?.muted, true, "still muted while the call goes on")
        XCTAssertEqual(players.status("org.mpris.MediaPlayer2.mpv"), "Paused")
        XCTAssertEqual(interruptions().map(\.0), [.began, .began])
        let interrupted = await session.isInterrupted
        XCTAssertTrue(interrupted)
        mixer.remove(21)
        await settled()
        XCTAssertEqual(mixer.stream(2)?.muted, true, "others come back the grace after the call")
        await pass(.milliseconds(300))
        XCTAssertEqual(mixer.stream(2)?.muted, false)
        XCTAssertEqual(players.status("org.mpris.MediaPlayer2.mpv"), "Playing")
        XCTAssertEqual(interruptions().map { "\($0.0) \($0.1.reason)" },
                       ["began listening", "began external", "ended external", "ended listening"])
    }

    /// Stopping: what was taken is given back at once and `ended` goes out for every `began`,
    /// a call's included (should_resume false: Voicebox will not go on).
    func testFinishGivesEverythingBackAndEndsEveryInterruption() async throws {
        await makeSession()
        try await setUpDesktop()
        await session.begin(.speaking, id: 3, policy: .pause)
        mixer.play(PlaybackStream(id: 21, applicationName: "Zoom", processID: 900, role: "phone"))
        await settled()
        await session.finish()
        XCTAssertEqual(mixer.stream(2)?.muted, false)
        XCTAssertEqual(players.status("org.mpris.MediaPlayer2.mpv"), "Playing")
        XCTAssertEqual(interruptions().map { "\($0.0) \($0.1.reason) \($0.1.shouldResume.map(String.init) ?? "-")" },
                       ["began speaking -", "began external -", "ended speaking true", "ended external false"])
        XCTAssertNil(journal.current)
        let interrupted = await session.isInterrupted
        XCTAssertFalse(interrupted)
    }

    /// What a voiceboxd that died left changed is undone by the next one once the server is
    /// reached, and the interruption it left is declared over, with what was given back.
    func testAJournalLeftByACrashIsRestoredWhenTheServerIsFoundAndEnded() async throws {
        journal = MemoryJournal()
        players = ScriptedPlayers()
        var left = InterruptionJournal(reason: .listening, id: 12)
        left.muted = [.init(id: 2, processID: 200, applicationName: "Firefox")]
        left.ducked = [.init(id: 3, processID: 300, applicationName: "vlc", originalVolume: [65536, 65536], ourVolume: [36854, 36854])]
        left.players = [MediaPlayer(name: "org.mpris.MediaPlayer2.mpv", owner: ":1.7", processID: 100)]
        try journal.save(left)
        await makeSession()  // as a new voiceboxd does: it finds the journal
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200, muted: true))
        mixer.play(PlaybackStream(id: 3, applicationName: "vlc", processID: 300, volume: [36854, 36854]))
        mixer.play(PlaybackStream(id: 4, applicationName: "other", processID: 400, muted: true))  // not ours
        players.add("org.mpris.MediaPlayer2.mpv", owner: ":1.7", status: "Paused", pid: 100)
        await settled()
        XCTAssertEqual(mixer.stream(2)?.muted, true, "nothing is done before the server is reached")
        mixer.ready()
        await settled()
        XCTAssertEqual(mixer.stream(2)?.muted, false)
        XCTAssertEqual(mixer.stream(3)?.volume, [65536, 65536])
        XCTAssertEqual(mixer.stream(4)?.muted, true)
        XCTAssertEqual(players.status("org.mpris.MediaPlayer2.mpv"), "Playing")
        XCTAssertNil(journal.current)
        let ended = try XCTUnwrap(interruptions().last)
        XCTAssertEqual(ended.0, .ended)
        XCTAssertEqual(ended.1, InterruptionInfo(reason: .listening, id: 12, shouldResume: true, pausedPlayers: ["org.mpris.MediaPlayer2.mpv"],
                                                 mutedStreams: 1, duckedStreams: 1))
        XCTAssertEqual(interruptions().count, 1, "no began: that one went out from the voiceboxd that died")
    }

    /// A Speak before the server is reached: others are interrupted as soon as it is.
    func testAnInterruptionBegunBeforeTheServerIsReachedTakesEffectWhenItIs() async throws {
        await makeSession()
        mixer.lost()  // no server yet
        await settled()
        await session.begin(.speaking, id: 1, policy: .pause)
        XCTAssertEqual(interruptions().map(\.0), [.began])
        mixer.ready(with: [PlaybackStream(id: 2, applicationName: "Firefox", processID: 200)])
        await settled()
        XCTAssertEqual(mixer.stream(2)?.muted, true)
        XCTAssertTrue(logged.withLock { $0 }.contains { $0.hasPrefix("cannot list the playback streams") }, "the failure was logged")
    }

    func testAJournalOfTheEarlierFormatIsRead() throws {
        let old = #"{"muted":[{"id":2,"processID":200,"applicationName":"Firefox"}],"ducked":[],"players":[]}"#
        let journal = try JSONDecoder().decode(InterruptionJournal.self, from: Data(old.utf8))
        XCTAssertEqual(journal.muted.map(\.id), [2])
        XCTAssertEqual(journal.memory, [])
        XCTAssertNil(journal.reason)
    }
}
