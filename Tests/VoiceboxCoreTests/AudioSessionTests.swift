import VoiceboxCore
import XCTest

/// The audio-session policy over a scripted sound server and players: what is paused, muted,
/// ducked and corked, what is restored (and what the user changed meanwhile is kept), the
/// signals, calls interrupting Voicebox, and recovery from a journal a crash left behind.
final class AudioSessionTests: XCTestCase {
    static let ownPID: Int32 = 4242
    var journal: MemoryJournal!
    var mixer: ScriptedMixer!
    var players: ScriptedPlayers!
    var bus: RecordingBus!
    var session: AudioSession!
    var follower: Task<Void, Never>?

    func makeSession(info: SoundServerInfo = .init(name: "pulseaudio", version: "16.1", isPipeWire: false),
                     grace: Duration = .milliseconds(50)) async {
        journal = MemoryJournal()
        mixer = ScriptedMixer(info: info, journal: journal)
        players = ScriptedPlayers()
        bus = RecordingBus()
        var settings = AudioSessionSettings()
        settings.grace = grace
        session = AudioSession(mixer: mixer, players: players, journal: journal, bus: bus, settings: settings,
                               ownProcessID: Self.ownPID)
        let session = session!
        await session.start()
        follower = Task { await session.run() }
    }

    override func tearDown() async throws {
        follower?.cancel()
    }

    /// The music player (pid 100, paused over MPRIS), a browser tab (no player: muted), a call,
    /// speech-dispatcher and Voicebox's own stream (never touched).
    func setUpDesktop() async throws {
        players.add("org.mpris.MediaPlayer2.mpv", owner: ":1.7", pid: 100)
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100, role: "music"))
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200, role: nil))
        mixer.play(PlaybackStream(id: 3, applicationName: "speech-dispatcher-espeak-ng", processID: 300))
        mixer.play(PlaybackStream(id: 4, applicationName: "Voicebox", processID: Self.ownPID))
        mixer.play(PlaybackStream(id: 5, applicationName: "Firefox", processID: 200, corked: true))
        try await settled()
    }

    /// The session has handled every event sent so far.
    func settled() async throws {
        try await Task.sleep(for: .milliseconds(30))
    }

    func interruptions() -> [(InterruptionState, InterruptionInfo)] {
        bus.signals.compactMap { if case .audioInterruption(let state, let info) = $0 { (state, info) } else { nil } }
    }

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
        try await Task.sleep(for: .milliseconds(150))
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
        try await settled()
        await session.begin(.listening, id: 1, policy: .pause)
        players.set("org.mpris.MediaPlayer2.mpv", status: "Paused")  // still paused: will be played again
        mixer.userSets(2, muted: false)  // the user wants the browser back now
        players.add("org.mpris.MediaPlayer2.other", owner: ":1.9", status: "Stopped", pid: 700)
        await session.end(.listening, id: 1)
        try await Task.sleep(for: .milliseconds(150))
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
        try await Task.sleep(for: .milliseconds(150))
        XCTAssertFalse(players.calls.contains("play org.mpris.MediaPlayer2.mpv"))
    }

    func testDuckLowersOthersAndRestoresOnlyVolumesTheUserLeftAlone() async throws {
        await makeSession()
        try await setUpDesktop()
        mixer.play(PlaybackStream(id: 7, applicationName: "vlc", processID: 700, volume: [40000, 40000]))
        try await settled()
        await session.begin(.speaking, id: 3, policy: .duck)
        let factor = AudioSessionSettings().duckFactor
        XCTAssertEqual(factor, 0.1778, accuracy: 0.0001, "-15 dB")
        XCTAssertEqual(mixer.stream(1)?.volume, [11654, 11654])
        XCTAssertEqual(mixer.stream(7)?.volume, [7113, 7113])
        XCTAssertEqual(interruptions().first?.1.duckedStreams, 3, "mpv, the browser and vlc; players are not paused by duck")
        XCTAssertEqual(players.calls, [])
        mixer.userSets(7, volume: [30000, 30000])
        await session.end(.speaking, id: 3)
        try await Task.sleep(for: .milliseconds(150))
        XCTAssertEqual(mixer.stream(1)?.volume, [65536, 65536])
        XCTAssertEqual(mixer.stream(2)?.volume, [65536, 65536])
        XCTAssertEqual(mixer.stream(7)?.volume, [30000, 30000], "the user's volume is kept")
    }

    func testMixLeavesEverythingAloneAndSaysNothing() async throws {
        await makeSession()
        try await setUpDesktop()
        await session.begin(.speaking, id: 4, policy: .mix)
        await session.end(.speaking, id: 4)
        try await Task.sleep(for: .milliseconds(100))
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
        try await Task.sleep(for: .milliseconds(50))
        await session.begin(.speaking, id: 3, policy: .pause)  // within the grace
        await session.end(.speaking, id: 3)
        try await Task.sleep(for: .milliseconds(400))
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
        try await settled()
        XCTAssertEqual(mixer.changes, [])
        XCTAssertEqual(players.status("org.mpris.MediaPlayer2.mpv"), "Playing")
        XCTAssertEqual(interruptions().first?.1, InterruptionInfo(reason: .speaking, id: 9, pausedPlayers: []))
        await session.end(.speaking, id: 9)
        try await Task.sleep(for: .milliseconds(150))
        XCTAssertEqual(interruptions().map(\.0), [.began, .ended])

        journal.full.withLock { $0 = false }
        await session.begin(.speaking, id: 10, policy: .duck)
        XCTAssertEqual(mixer.changes.count, 3, "the player's, the browser's and totem's streams are ducked: \(mixer.changes)")
        XCTAssertEqual(mixer.unjournaled, [])
    }

    /// The server restarts mid-interruption and, as module-stream-restore and WirePlumber do, gives
    /// the next stream of the same application and role the mute and volume it remembered: ours.
    /// They are set back once; a stream the server did not bring back changed is left alone.
    func testWhatTheServerRememberedOfOurChangesAcrossARestartIsSetBack() async throws {
        await makeSession()
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200, role: nil))
        mixer.play(PlaybackStream(id: 3, applicationName: "vlc", processID: 300, role: "music"))
        try await settled()
        await session.begin(.speaking, id: 1, policy: .pause)
        XCTAssertEqual(mixer.changes, ["mute 2 true", "mute 3 true"])
        mixer.lost()
        try await settled()
        await session.end(.speaking, id: 1)
        try await Task.sleep(for: .milliseconds(150))
        XCTAssertEqual(interruptions().map(\.0), [.began, .ended])
        mixer.ready()
        mixer.play(PlaybackStream(id: 12, applicationName: "Firefox", processID: 201, role: nil, muted: true))
        mixer.play(PlaybackStream(id: 13, applicationName: "vlc", processID: 300, role: "music", muted: false))
        try await settled()
        XCTAssertEqual(mixer.stream(12)?.muted, false, "the server's memory of our mute is undone")
        XCTAssertEqual(mixer.changes.suffix(1), ["mute 12 false"], "vlc came back unmuted: nothing to do")
        mixer.play(PlaybackStream(id: 14, applicationName: "Firefox", processID: 202, role: nil, muted: true))
        try await settled()
        XCTAssertEqual(mixer.stream(14)?.muted, true, "only once: later mutes are the user's")
        try await Task.sleep(for: .milliseconds(2100))
        mixer.userSets(13, muted: true)
        try await settled()
        XCTAssertEqual(mixer.stream(13)?.muted, true, "vlc muted 2 s after it started: the user's")
        XCTAssertNil(journal.current)
    }

    func testAStreamThatStartsDuringThePauseIsSilencedToo() async throws {
        await makeSession()
        try await setUpDesktop()
        await session.begin(.listening, id: 5, policy: .pause)
        mixer.play(PlaybackStream(id: 8, applicationName: "totem", processID: 800, role: "video"))
        try await settled()
        XCTAssertEqual(mixer.stream(8)?.muted, true)
        await session.end(.listening, id: 5)
        try await Task.sleep(for: .milliseconds(150))
        XCTAssertEqual(mixer.stream(8)?.muted, false)
    }

    /// With module-role-cork the server corks the music and video streams itself (their clients
    /// are asked to pause); the rest is muted.
    func testRoleCorkDoesTheCorkingWherePulseAudioHasIt() async throws {
        await makeSession(info: .init(name: "pulseaudio", version: "16.1", isPipeWire: false,
                                roleCorkTriggers: ["phone"], roleCorkTargets: ["music", "video"]))
        mixer.play(PlaybackStream(id: 1, applicationName: "paplay", processID: 100, role: "music"))
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200))
        try await settled()
        await session.begin(.speaking, id: 1, policy: .pause)
        XCTAssertEqual(mixer.changes, ["trigger phone", "mute 2 true"])
        XCTAssertEqual(interruptions().first?.1.corkedStreams, 1)
        XCTAssertEqual(interruptions().first?.1.mutedStreams, 1)
        await session.end(.speaking, id: 1)
        try await Task.sleep(for: .milliseconds(150))
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
        try await settled()
        await session.begin(.speaking, id: 1, policy: .pause)
        XCTAssertEqual(mixer.changes, ["trigger phone", "mute 3 true"])
        XCTAssertEqual(interruptions().first?.1.corkedStreams, 1)
        XCTAssertEqual(interruptions().first?.1.mutedStreams, 1)
        await session.end(.speaking, id: 1)
        try await Task.sleep(for: .milliseconds(150))
        XCTAssertEqual(mixer.stream(3)?.muted, false)
        XCTAssertEqual(mixer.stream(1)?.corked, false)
    }

    func testPipeWireIsNeverAskedToCork() async throws {
        await makeSession(info: .init(name: "PulseAudio (on PipeWire 0.3.65)", version: "15.0.0", isPipeWire: true,
                                roleCorkTriggers: ["phone"], roleCorkTargets: ["music"]))
        mixer.play(PlaybackStream(id: 1, applicationName: "paplay", processID: 100, role: "music"))
        try await settled()
        await session.begin(.speaking, id: 1, policy: .pause)
        XCTAssertEqual(mixer.changes, ["mute 1 true"])
    }

    /// A call (a phone-role stream, playing or recording) holds Voicebox's work until it ends.
    func testACallInterruptsVoiceboxUntilItEnds() async throws {
        await makeSession()
        let target = RecordingTarget()
        await session.add(target)
        mixer.play(PlaybackStream(id: 20, applicationName: "Voicebox", processID: Self.ownPID, role: "phone"))  // our own trigger
        try await settled()
        XCTAssertEqual(target.events, [])
        mixer.play(PlaybackStream(id: 21, applicationName: "Zoom", processID: 900, role: "phone"))
        mixer.record(RecordingStream(id: 22, applicationName: "Zoom", processID: 900, role: "Communication"))
        try await settled()
        XCTAssertEqual(target.events, ["began"])
        XCTAssertEqual(interruptions().map(\.1.reason), [.external])
        mixer.remove(21)
        try await settled()
        XCTAssertEqual(target.events, ["began"], "the call still records")
        mixer.record(RecordingStream(id: 22, applicationName: "Zoom", processID: 900, role: "Communication", corked: true))
        try await settled()
        XCTAssertEqual(target.events, ["began", "ended"])
        XCTAssertEqual(interruptions().last?.0, .ended)
        XCTAssertEqual(interruptions().last?.1.shouldResume, true)
        XCTAssertEqual(interruptions().last?.1.id, 0)
    }

    /// What a voiceboxd that died left changed is undone by the next one, as it would have been.
    func testAJournalLeftByACrashIsRestoredWhenTheServerIsFound() async throws {
        await makeSession()
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200, muted: true))
        mixer.play(PlaybackStream(id: 3, applicationName: "vlc", processID: 300, volume: [11653, 11653]))
        mixer.play(PlaybackStream(id: 4, applicationName: "other", processID: 400, muted: true))  // not ours
        players.add("org.mpris.MediaPlayer2.mpv", owner: ":1.7", status: "Paused", pid: 100)
        var left = InterruptionJournal()
        left.muted = [.init(id: 2, processID: 200, applicationName: "Firefox")]
        left.ducked = [.init(id: 3, processID: 300, applicationName: "vlc", originalVolume: [65536, 65536], ourVolume: [11653, 11653])]
        left.players = [MediaPlayer(name: "org.mpris.MediaPlayer2.mpv", owner: ":1.7", processID: 100)]
        try journal.save(left)
        await session.start()  // as a new voiceboxd does: it finds the journal
        await session.begin(.speaking, id: 1, policy: .pause)  // and a Speak before the server is reached
        mixer.ready()
        try await Task.sleep(for: .milliseconds(100))
        XCTAssertEqual(mixer.stream(2)?.muted, false)
        XCTAssertEqual(mixer.stream(3)?.volume, [65536, 65536])
        XCTAssertEqual(mixer.stream(4)?.muted, true)
        XCTAssertEqual(players.status("org.mpris.MediaPlayer2.mpv"), "Playing")
        XCTAssertEqual(journal.current?.muted.map(\.id), [3], "only what this voiceboxd muted (vlc) is left in the journal")
        await session.end(.speaking, id: 1)
        try await Task.sleep(for: .milliseconds(150))
        XCTAssertNil(journal.current)
    }
}
