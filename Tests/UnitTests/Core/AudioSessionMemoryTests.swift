@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import XCTest

/// The server's memory: what PulseAudio (module-stream-restore) and WirePlumber (restore-stream)
/// remember of an application's or role's streams is, after any interruption, what it was before
/// Voicebox touched anything; streams that start meanwhile start from the user's level.
final class AudioSessionMemoryTests: AudioSessionTestCase {
    let music = "sink-input-by-application-name:mpv"
    let browser = "sink-input-by-application-name:Firefox"

    /// The user's levels: mpv remembered at 30000, Firefox with nothing remembered but an entry.
    func setUpRemembered() {
        mixer.setMemory(RememberedSetting(name: music, volume: [30000, 30000], channelMap: [1, 2]))
    }

    func testADuckLeavesPulseAudiosMemoryAsItWas() async throws {
        await makeSession(info: Self.pulse)
        setUpRemembered()
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100))
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200))
        await settled()
        XCTAssertEqual(mixer.stream(1)?.volume, [30000, 30000], "it started from what the server remembered")
        let before = mixer.memory
        await session.begin(.speaking, id: 1, policy: .duck)
        XCTAssertEqual(mixer.stream(1)?.volume, mixer.attenuate([30000, 30000], byDecibels: -15))
        XCTAssertEqual(mixer.memory, before, "kept as it was while the duck lasts")
        XCTAssertEqual(journal.current?.memory.map(\.name).sorted(), [browser, music], "journaled before the change")
        // The player pauses and plays again: PulseAudio saves the stream's (ducked) volume again.
        mixer.userSets(1, corked: true)
        mixer.userSets(1, corked: false)
        await settled()
        XCTAssertEqual(mixer.memory, before, "written back after each save")
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(1)?.volume, [30000, 30000])
        XCTAssertEqual(mixer.memory, before, "and after the restore, which the server saved too")
        XCTAssertNil(journal.current)
    }

    /// After the interruption PulseAudio saves a stream we set back at each of its changes (the
    /// player pauses, plays): an entry that held no volume would get the stream's. Undone while
    /// the stream plays; the user's own change is the user's.
    func testPulseAudiosLaterSavesOfAStreamSetBackAreUndone() async throws {
        await makeSession(info: Self.pulse)
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200))
        await settled()
        let before = mixer.memory
        await session.begin(.speaking, id: 1, policy: .duck)
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.memory, before)
        mixer.userSets(2, corked: true)
        mixer.userSets(2, corked: false)
        await settled()
        XCTAssertEqual(mixer.memory, before, "the pause and play saved the stream's volume; undone")
        mixer.userSets(2, volume: [40000, 40000])
        await settled()
        XCTAssertEqual(mixer.memory[browser]?.volume, [40000, 40000], "the user's")
        mixer.userSets(2, corked: true)
        await settled()
        XCTAssertEqual(mixer.memory[browser]?.volume, [40000, 40000])
    }

    func testAPauseLeavesPulseAudiosMemoryAsItWas() async throws {
        await makeSession(info: Self.pulse)
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200))
        await settled()
        let before = mixer.memory
        await session.begin(.speaking, id: 1, policy: .pause)
        XCTAssertEqual(mixer.stream(2)?.muted, true)
        XCTAssertEqual(mixer.memory, before)
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.memory, before)
    }

    /// A track change during a duck: the player closes its stream and opens another. The new one
    /// starts from the user's level (the memory was kept clean) and is ducked from it; afterwards
    /// it is at the user's level, and so is the next one.
    func testATrackChangeDuringADuckStartsAndEndsAtTheUsersLevel() async throws {
        await makeSession(info: Self.pulse)
        setUpRemembered()
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100))
        await settled()
        await session.begin(.speaking, id: 1, policy: .duck)
        let ducked = mixer.attenuate([30000, 30000], byDecibels: -15)
        mixer.remove(1)
        mixer.play(PlaybackStream(id: 6, applicationName: "mpv", processID: 100))
        await settled()
        XCTAssertEqual(mixer.stream(6)?.volume, ducked, "ducked from the user's level, not from an inherited one")
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(6)?.volume, [30000, 30000])
        mixer.remove(6)
        mixer.play(PlaybackStream(id: 7, applicationName: "mpv", processID: 100))
        await settled()
        XCTAssertEqual(mixer.stream(7)?.volume, [30000, 30000], "the next stream starts at the user's level")
        XCTAssertEqual(mixer.memory[music]?.volume, [30000, 30000])
    }

    /// A stream that started from a level we set (the server saved it a moment before we put the
    /// memory back) is ducked from the user's level, and gets it back afterwards.
    func testANewcomerThatInheritedOurLevelIsTreatedFromTheUsersLevel() async throws {
        await makeSession(info: Self.pulse)
        setUpRemembered()
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100))
        await settled()
        await session.begin(.speaking, id: 1, policy: .duck)
        let ducked = mixer.attenuate([30000, 30000], byDecibels: -15)
        mixer.setMemory(RememberedSetting(name: music, volume: ducked, channelMap: [1, 2]))  // as if saved just now
        mixer.remove(1)
        mixer.play(PlaybackStream(id: 6, applicationName: "mpv", processID: 100))
        await settled()
        XCTAssertEqual(mixer.stream(6)?.volume, ducked, "not ducked twice")
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(6)?.volume, [30000, 30000], "given the user's level, not the inherited one")
        XCTAssertEqual(mixer.memory[music]?.volume, [30000, 30000])
    }

    /// The user moves a ducked stream's volume: the server saves it, and that is the user's new
    /// setting, kept in the memory (and on the stream) afterwards.
    func testWhatTheUserSetsDuringTheDuckIsWhatTheServerKeeps() async throws {
        await makeSession(info: Self.pulse)
        setUpRemembered()
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100))
        await settled()
        await session.begin(.speaking, id: 1, policy: .duck)
        mixer.userSets(1, volume: [50000, 50000])
        await settled()
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(1)?.volume, [50000, 50000])
        XCTAssertEqual(mixer.memory[music]?.volume, [50000, 50000])
    }

    /// module-role-cork's trigger is a stream of role phone: the entry PulseAudio makes for it is
    /// deleted again.
    func testTheCorkTriggersEntryIsDeletedAfterwards() async throws {
        await makeSession(info: .init(name: "pulseaudio", version: "16.1", isPipeWire: false, roleCorkTriggers: ["phone"],
                                      roleCorkTargets: ["music"], memory: .readWrite))
        mixer.play(PlaybackStream(id: 1, applicationName: "paplay", processID: 100, role: "music"))
        await settled()
        let before = mixer.memory
        await session.begin(.speaking, id: 1, policy: .pause)
        XCTAssertNotNil(mixer.memory["sink-input-by-media-role:phone"])
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.memory, before)
    }

    /// WirePlumber: its memory cannot be read, so the stream's own level is what it keeps; it saves
    /// each change on its own time and says nothing, so the memory is written again a moment
    /// after each change.
    func testADuckLeavesWirePlumbersMemoryAsItWas() async throws {
        await makeSession(info: Self.pipewire)
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100, volume: [30000, 30000]))
        await pass(.seconds(3))
        await session.begin(.speaking, id: 1, policy: .duck)
        let ducked = mixer.attenuate([30000, 30000], byDecibels: -15)
        XCTAssertEqual(mixer.stream(1)?.volume, ducked)
        XCTAssertEqual(mixer.memory[music]?.volume, [30000, 30000], "written back after the change")
        mixer.setMemory(RememberedSetting(name: music, volume: ducked, channelMap: [1, 2]))  // WirePlumber saves late
        await pass(.milliseconds(299))
        XCTAssertEqual(mixer.memory[music]?.volume, ducked)
        await pass(.milliseconds(1))
        XCTAssertEqual(mixer.memory[music]?.volume, [30000, 30000], "written back again once it settled")
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(1)?.volume, [30000, 30000])
        XCTAssertEqual(mixer.memory[music]?.volume, [30000, 30000])
    }

    /// On pipewire-pulse the user's change to a ducked stream is seen on the stream only: it is the
    /// user's, kept on the stream and as what WirePlumber remembers.
    func testWhatTheUserSetsDuringTheDuckIsWhatWirePlumberKeeps() async throws {
        await makeSession(info: Self.pipewire)
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100, volume: [30000, 30000]))
        await pass(.seconds(3))
        await session.begin(.speaking, id: 1, policy: .duck)
        await pass(.seconds(3))
        mixer.userSets(1, volume: [50000, 50000])
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(1)?.volume, [50000, 50000], "not lowered again: the user's")
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(1)?.volume, [50000, 50000])
        XCTAssertEqual(mixer.memory[music]?.volume, [50000, 50000])
    }

    /// A stream set back to just its entry is left for WirePlumber to save (pipewire-pulse would
    /// round a write); one that is gone has its entry written.
    func testWirePlumberSavesWhatWasSetBackItselfAndIsToldTheRest() async throws {
        await makeSession(info: Self.pipewire)
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100, volume: [30000, 30000]))
        mixer.play(PlaybackStream(id: 2, applicationName: "totem", processID: 200, volume: [20000, 20000]))
        await pass(.seconds(3))
        await session.begin(.speaking, id: 1, policy: .duck)
        mixer.remove(2)
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        let writes = mixer.changes.filter { $0.hasPrefix("remember") }
        XCTAssertEqual(writes.last, "remember sink-input-by-application-name:totem", "\(writes)")
        XCTAssertEqual(mixer.memory[music]?.volume, [30000, 30000])
        XCTAssertEqual(mixer.memory["sink-input-by-application-name:totem"]?.volume, [20000, 20000])
    }

    /// WirePlumber falls behind and does not list a put-back in time: the entry stays journaled,
    /// and is let go once the server holds it, which is asked, never written again.
    func testAPutBackWirePlumberTakesUpLateIsLetGoOnceItHoldsIt() async throws {
        await duckWithWirePlumberBehind()
        XCTAssertEqual(interruptions().map(\.0), [.began, .ended])
        XCTAssertEqual(journal.current?.memory.map(\.name), [totem], "journaled until the server holds it")
        XCTAssertEqual(asked(), 0)
        await pass(.seconds(1))
        XCTAssertEqual(asked(), 1, "asked a second later")
        XCTAssertEqual(journal.current?.memory.map(\.name), [totem], "not held yet")
        mixer.catchUp()
        await pass(.seconds(2))
        XCTAssertEqual(asked(), 2)
        XCTAssertNil(journal.current, "let go once the server holds it")
        XCTAssertEqual(mixer.memory[totem]?.volume, [20000, 20000])
        let writes = mixer.changes.filter { $0.hasPrefix("remember") }
        await pass(.seconds(300))
        XCTAssertEqual(mixer.changes.filter { $0.hasPrefix("remember") }, writes, "never written again")
        XCTAssertEqual(asked(), 2, "no check once nothing waits")
    }

    /// The checks come memory-check-first after the failed put-back (1 s as standard; 0.25 s
    /// here), then 2, 4, 8, 16, 30 and 60 times it after the one before, and no more.
    func testThePutBackChecksComeAtMemoryCheckFirstAndItsMultiples() async throws {
        await duckWithWirePlumberBehind(bounds: Bounds([.memoryCheckFirst: .milliseconds(250)]), then: .milliseconds(300))
        XCTAssertEqual(journal.current?.memory.map(\.name), [totem], "the put-back failed at the end of the grace")
        XCTAssertEqual(asked(), 0)
        for (done, multiple) in [1, 2, 4, 8, 16, 30, 60].enumerated() {
            await pass(.milliseconds(250 * multiple - 10))
            XCTAssertEqual(asked(), done, "not before \(multiple) × 0.25 s")
            await pass(.milliseconds(10))
            XCTAssertEqual(asked(), done + 1, "check \(done + 1) after \(multiple) × 0.25 s")
        }
        await pass(.seconds(600))
        XCTAssertEqual(asked(), 7, "no more checks")
    }

    /// A server that never holds the put-back is asked 7 times over about two minutes; the entry
    /// then waits, journaled, for the server's return (or the next start), where it is written.
    func testAPutBackWirePlumberNeverTakesUpWaitsForTheServersReturn() async throws {
        await duckWithWirePlumberBehind()
        for _ in 0..<20 { await pass(.seconds(10)) }
        XCTAssertEqual(asked(), 7)
        XCTAssertEqual(journal.current?.memory.map(\.name), [totem])
        XCTAssertTrue(logged.withLock { $0 }.contains { $0.contains("still does not hold what was put back of \(totem)") })
        mixer.catchUp()
        mixer.lost()
        mixer.ready()
        await settled()
        XCTAssertNil(journal.current, "written when the server returns")
        XCTAssertEqual(mixer.memory[totem]?.volume, [20000, 20000])
    }

    /// Our duck as WirePlumber rounds it (a quiet level: 2249 comes back 2241) is still ours: the
    /// next stream, which starts from it, is set back to the user's level; and with the next
    /// duck's put-back failing too, what waits is still the user's level.
    func testOurDuckAsWirePlumberRoundsItIsStillOurs() async throws {
        await duckWithWirePlumberBehind(level: 4000)
        XCTAssertEqual(mixer.attenuate([4000, 4000], byDecibels: -15), [2249, 2249])
        for _ in 0..<14 { await pass(.seconds(10)) }
        mixer.catchUp(losing: true)
        mixer.setMemory(RememberedSetting(name: totem, volume: [2241, 2241], channelMap: [1, 2]))
        mixer.play(PlaybackStream(id: 3, applicationName: "totem", processID: 201))
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(3)?.volume, [4000, 4000], "set back from our rounded duck")
        await session.begin(.speaking, id: 2, policy: .duck)
        mixer.remove(3)
        await settled()
        mixer.fallBehind()
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(journal.current?.memory.first { $0.name == totem }?.before?.volume, [4000, 4000])
    }

    /// Stopped (SIGTERM) before the next check: the server is asked once more, and the journal
    /// left for the next voiceboxd holds only what it still does not hold.
    func testAtTheEndThePutBackIsAskedAfterOnceMore() async throws {
        await duckWithWirePlumberBehind()
        XCTAssertNotNil(journal.current)
        mixer.catchUp()
        await session.finish()
        XCTAssertEqual(asked(), 1)
        XCTAssertNil(journal.current, "nothing left for the next voiceboxd")
    }

    private var totem: String { "sink-input-by-application-name:totem" }

    private func asked() -> Int { mixer.changes.filter { $0.hasPrefix("asked") }.count }

    /// WirePlumber applies its memory a moment after a stream appears: a newcomer seen at full
    /// volume and ducked, then set to the user's level by WirePlumber, is ducked again from there.
    func testANewcomerWirePlumberSetsLateIsDuckedFromItsLevel() async throws {
        await makeSession(info: Self.pipewire)
        mixer.applyMemoryLate()
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100, volume: [30000, 30000]))
        mixer.play(PlaybackStream(id: 2, applicationName: "totem", processID: 200))
        await settled()
        await session.begin(.speaking, id: 1, policy: .duck)
        mixer.setMemory(RememberedSetting(name: "sink-input-by-application-name:vlc", volume: [20000, 20000], channelMap: [1, 2]))
        mixer.play(PlaybackStream(id: 3, applicationName: "vlc", processID: 300))
        await settled()
        XCTAssertEqual(mixer.stream(3)?.volume, mixer.attenuate([65536, 65536], byDecibels: -15))
        XCTAssertEqual(mixer.memory["sink-input-by-application-name:vlc"]?.volume, [20000, 20000],
                       "what the young stream showed is not written over WirePlumber's memory")
        await pass(.milliseconds(100))
        mixer.applyMemory(to: 3)
        await settled()
        XCTAssertEqual(mixer.stream(3)?.volume, mixer.attenuate([20000, 20000], byDecibels: -15), "ducked from the level WirePlumber gave it")
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(3)?.volume, [20000, 20000])
        XCTAssertEqual(mixer.memory["sink-input-by-application-name:vlc"]?.volume, [20000, 20000])
    }

    /// kill -9 mid-duck, the stream closed, the memory left holding our level: the next voiceboxd
    /// puts the memory back from the journal, and the application's next stream starts at the
    /// user's level; `ended` goes out with what was given back.
    func testACrashWithTheStreamClosedLeavesNoTrace() async throws {
        await makeSession(info: Self.pulse)
        setUpRemembered()
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100))
        await settled()
        let before = mixer.memory
        await session.begin(.speaking, id: 4, policy: .duck)
        await killSession()
        let ducked = mixer.attenuate([30000, 30000], byDecibels: -15)
        mixer.userSets(1, corked: true)  // the player stops: the server saves our level
        mixer.remove(1)
        let left = try XCTUnwrap(journal.current)
        XCTAssertEqual(left.memory.map(\.name), [music])

        let memory = mixer.memory
        XCTAssertEqual(memory[music]?.volume, ducked, "the server now remembers our level")
        await makeSession(info: Self.pulse)
        mixer.setMemory(memory[music]!)
        mixer.ready()
        await settled()
        XCTAssertEqual(mixer.memory[music], before[music], "put back from the journal")
        mixer.play(PlaybackStream(id: 8, applicationName: "mpv", processID: 100))
        await settled()
        XCTAssertEqual(mixer.stream(8)?.volume, [30000, 30000])
        XCTAssertEqual(mixer.stream(8)?.muted, false)
        XCTAssertEqual(interruptions().map(\.0), [.ended])
        XCTAssertEqual(interruptions().first?.1.reason, .speaking)
        XCTAssertEqual(interruptions().first?.1.id, 4)
        XCTAssertEqual(interruptions().first?.1.shouldResume, true)
        XCTAssertNil(journal.current)
    }

    /// kill -9 mid-pause, and the application started a new stream before voiceboxd came back: it
    /// started muted (the server remembered our mute); the next voiceboxd unmutes it.
    func testAStreamThatStartedFromOurMuteAfterACrashIsUnmuted() async throws {
        await makeSession(info: Self.pulse)
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200))
        await settled()
        await session.begin(.speaking, id: 5, policy: .pause)
        await killSession()
        mixer.userSets(2, corked: true)
        mixer.remove(2)
        let memory = mixer.memory
        XCTAssertEqual(memory[browser]?.muted, true)

        await makeSession(info: Self.pulse)
        mixer.setMemory(memory[browser]!)
        mixer.ready(with: [PlaybackStream(id: 9, applicationName: "Firefox", processID: 201)])
        await settled()
        XCTAssertEqual(mixer.stream(9)?.muted, false)
        XCTAssertEqual(mixer.memory[browser]?.muted, false)
        XCTAssertEqual(interruptions().last?.1, InterruptionInfo(reason: .speaking, id: 5, shouldResume: true, mutedStreams: 1))
    }

    /// The server restarts mid-interruption (its streams go, its memory stays): the entries are
    /// put back when it returns, and a stream that started from our change is set back, once.
    func testWhatTheServerRememberedAcrossItsRestartIsPutBack() async throws {
        await makeSession(info: Self.pulse)
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200))
        mixer.play(PlaybackStream(id: 3, applicationName: "vlc", processID: 300, role: "music"))
        await settled()
        let before = mixer.memory
        await session.begin(.speaking, id: 1, policy: .pause)
        await settled()  // the entries put back once
        mixer.userSets(2, corked: true)  // saved: muted, and the server dies before anything puts it back
        mixer.lost()
        await settled()
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(interruptions().map(\.0), [.began, .ended])
        XCTAssertNotNil(journal.current?.memory.first { $0.name == browser }, "kept for the server's return")
        mixer.ready(with: [PlaybackStream(id: 12, applicationName: "Firefox", processID: 201)])
        await settled()
        XCTAssertEqual(mixer.stream(12)?.muted, false, "started from our mute: unmuted")
        XCTAssertEqual(mixer.memory[browser], before[browser])
        mixer.userSets(12, muted: true)
        await settled()
        XCTAssertEqual(mixer.stream(12)?.muted, true, "the user's mute is the user's")
        XCTAssertNil(journal.current)
    }

    /// The same, but the entry was put back before the server died: a stream of the application
    /// starts from the user's own setting when it returns, so nothing is set back, and a mute the
    /// user gives it at once (within the repair window) is the user's. (PulseAudio applies its
    /// memory as it makes a stream: what a stream shows first is what it started from.)
    func testAStreamThatStartsFromTheUsersSettingAfterTheServersReturnIsTheUsers() async throws {
        await makeSession(info: Self.pulse)
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200))
        await settled()
        let before = mixer.memory
        await session.begin(.speaking, id: 1, policy: .pause)
        await settled()
        mixer.userSets(2, corked: true)  // saved: muted
        await settled()  // and put back again
        XCTAssertEqual(mixer.memory[browser], before[browser])
        mixer.lost()
        await settled()
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        mixer.ready(with: [PlaybackStream(id: 12, applicationName: "Firefox", processID: 201)])
        await settled()
        XCTAssertEqual(mixer.stream(12)?.muted, false, "started from the user's setting")
        mixer.userSets(12, muted: true)
        await settled()
        XCTAssertEqual(mixer.stream(12)?.muted, true, "the user's mute is the user's")
        XCTAssertFalse(mixer.changes.contains("mute 12 false"), "\(mixer.changes)")
    }
}
