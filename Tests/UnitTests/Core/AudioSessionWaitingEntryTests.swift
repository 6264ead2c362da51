@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import XCTest

/// Entries whose put-back the server did not take up (WirePlumber fell behind or lost it; PulseAudio
/// refused it) wait, journaled, to be put back. Meanwhile the user's own settings win over them, a
/// stream that starts from our change they kept is set back, the next interruption takes them up,
/// and nothing is left journaled once the server holds the user's setting.
final class AudioSessionWaitingEntryTests: AudioSessionTestCase {
    private var totem: String { "sink-input-by-application-name:totem" }
    private var firefox: String { "sink-input-by-application-name:Firefox" }
    private var music: String { "sink-input-by-application-name:mpv" }
    private var musicRole: String { "sink-input-by-media-role:music" }
    private let user = [UInt32(50000), 50000]

    private func asked() -> Int { mixer.changes.filter { $0.hasPrefix("asked") }.count }

    /// totem at 20000 ducked and closed; WirePlumber saved the duck and loses the put-back; the
    /// checks run out with the entry still waiting.
    private func pendingAfterChecksRanOut() async {
        await duckWithWirePlumberBehind()
        for _ in 0..<14 { await pass(.seconds(10)) }
        mixer.catchUp(losing: true)
    }

    /// PulseAudio: mpv at 30000 ducked and closed (PulseAudio saved our duck), the put-back
    /// refused: the entry waits.
    private func pulseAudioRefusesThePutBack() async {
        await makeSession(info: Self.pulse)
        mixer.setMemory(RememberedSetting(name: music, volume: [30000, 30000], channelMap: [1, 2]))
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100))
        await settled()
        await session.begin(.speaking, id: 1, policy: .duck)
        mixer.fail("remember")
        mixer.userSets(1, corked: true)  // PulseAudio saves our duck; the write-back is refused
        mixer.remove(1)
        await settled()
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
    }

    /// Then totem's next stream (3) is given our duck by the server as it starts, or `late`, 3 s
    /// after (too late to be told from a level the user set).
    private func nextStreamGivenOurDuck(late: Bool) async {
        if late { mixer.applyMemoryLate() }
        mixer.play(PlaybackStream(id: 3, applicationName: "totem", processID: 201))
        await pass(.seconds(3))
        guard late else { return }
        mixer.applyMemory(to: 3)
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(3)?.volume, mixer.attenuate([20000, 20000], byDecibels: -15))
    }

    /// The checks are over and the put-back never arrived (WirePlumber lost it): the next stream,
    /// given our duck by the server as it starts, is set back to the user's level, which the server
    /// then saves; the entry waits no more.
    func testAStreamThatStartsFromAWaitingDuckIsSetBackToTheUsersLevel() async throws {
        await pendingAfterChecksRanOut()
        await nextStreamGivenOurDuck(late: false)
        XCTAssertEqual(mixer.stream(3)?.volume, [20000, 20000])
        XCTAssertEqual(mixer.memory[totem]?.volume, [20000, 20000])
        XCTAssertNil(journal.current)
    }

    /// The server gave the next stream our duck late (after `serverRestoreWindow`): the next duck
    /// takes the waiting record as its own: it ducks that stream from the user's level, sets it
    /// back to it, and its end leaves the server holding the user's level, nothing journaled.
    func testAnEntryStillWaitingIsPutBackByTheNextDuck() async throws {
        await pendingAfterChecksRanOut()
        await nextStreamGivenOurDuck(late: true)
        let ours = mixer.attenuate([20000, 20000], byDecibels: -15)
        XCTAssertEqual(mixer.stream(3)?.volume, ours, "started from our duck")
        await session.begin(.speaking, id: 2, policy: .duck)
        XCTAssertEqual(mixer.stream(3)?.volume, ours, "ducked from the user's level, not from ours")
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(3)?.volume, [20000, 20000], "set back to the user's level")
        XCTAssertEqual(mixer.memory[totem]?.volume, [20000, 20000])
        await pass(.seconds(2))
        XCTAssertNil(journal.current, "let go once the server shows it saved")
    }

    /// The same, the stream closed before the next duck ends: its end writes the user's level, and
    /// the entry waits no more.
    func testAnEntryStillWaitingIsWrittenByTheNextDuck() async throws {
        await pendingAfterChecksRanOut()
        await nextStreamGivenOurDuck(late: true)
        await session.begin(.speaking, id: 2, policy: .duck)
        mixer.remove(3)
        await settled()
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.memory[totem]?.volume, [20000, 20000])
        XCTAssertNil(journal.current)
    }

    /// The user sets that stream's level during the next duck, whose put-back WirePlumber is late
    /// with again: what then waits is the user's new level, not the older one.
    func testTheUsersLevelDuringTheNextDuckReplacesTheWaitingOne() async throws {
        await pendingAfterChecksRanOut()
        await nextStreamGivenOurDuck(late: true)
        await session.begin(.speaking, id: 2, policy: .duck)
        await pass(.seconds(1))
        mixer.userSets(3, volume: [50000, 50000])
        await pass(.seconds(1))
        mixer.remove(3)
        await settled()
        mixer.fallBehind()
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(journal.current?.memory.map(\.name), [totem])
        XCTAssertEqual(journal.current?.memory.first?.before?.volume, [50000, 50000], "the user's new level waits")
        mixer.catchUp()
        await pass(.seconds(2))
        XCTAssertNil(journal.current)
        XCTAssertEqual(mixer.memory[totem]?.volume, [50000, 50000])
    }

    /// voiceboxd killed (-9) during that next duck: the journal holds the waiting record with the
    /// marks of both ducks, so the next voiceboxd sets the stream and the entry back to the user's
    /// level, not to our first duck.
    func testAKillDuringTheNextDuckPutsBackTheWaitingLevel() async throws {
        await pendingAfterChecksRanOut()
        await nextStreamGivenOurDuck(late: true)
        let ours = mixer.attenuate([20000, 20000], byDecibels: -15)
        await session.begin(.speaking, id: 2, policy: .duck)
        await settled()
        await killSession()
        let record = try XCTUnwrap(journal.current?.memory.first { $0.name == totem })
        XCTAssertEqual(record.before?.volume, [20000, 20000], "journaled: the user's level")
        XCTAssertTrue(record.levels.contains(ours))
        let stream = try XCTUnwrap(mixer.stream(3))

        await makeSession(info: Self.pipewire)
        // WirePlumber saved the ducked stream's level after the last write.
        mixer.setMemory(RememberedSetting(name: totem, volume: stream.volume, channelMap: [1, 2]))
        mixer.ready(with: [stream])
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(3)?.volume, [20000, 20000], "the stream at the user's level")
        XCTAssertEqual(mixer.memory[totem]?.volume, [20000, 20000], "and what the server remembers")
        XCTAssertEqual(interruptions().map(\.0), [.ended])
        await pass(.seconds(2))
        XCTAssertNil(journal.current)
    }

    /// The user turns totem's next stream up to 50000 by hand while the entry waits, with no
    /// interruption running (WirePlumber saves it): the next duck keeps the user's level, on the
    /// stream and in the server's memory, and nothing is left journaled.
    func testAUserLevelSetWhileTheEntryWaitedSurvivesTheNextDuck() async throws {
        await pendingAfterChecksRanOut()
        await nextStreamGivenOurDuck(late: true)
        mixer.userSets(3, volume: user)
        await pass(.seconds(3))
        XCTAssertEqual(mixer.memory[totem]?.volume, user, "WirePlumber holds the user's level")
        await session.begin(.speaking, id: 2, policy: .duck)
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(3)?.volume, user, "stream set back to the user's level")
        XCTAssertEqual(mixer.memory[totem]?.volume, user, "server memory keeps the user's level")
        for _ in 0..<20 { await pass(.seconds(10)) }
        XCTAssertNil(journal.current, "nothing left journaled")
    }

    /// The same with voiceboxd killed (-9) during the next duck: the journal holds the user's new
    /// level, and the next voiceboxd puts that back.
    func testAKillDuringTheNextDuckKeepsTheLevelTheUserSetWhileTheEntryWaited() async throws {
        await pendingAfterChecksRanOut()
        await nextStreamGivenOurDuck(late: true)
        mixer.userSets(3, volume: user)
        await pass(.seconds(3))
        await session.begin(.speaking, id: 2, policy: .duck)
        await settled()
        await killSession()
        let stream = try XCTUnwrap(mixer.stream(3))
        XCTAssertEqual(journal.current?.memory.first { $0.name == totem }?.before?.volume, user, "journaled before")

        await makeSession(info: Self.pipewire)
        mixer.setMemory(RememberedSetting(name: totem, volume: stream.volume, channelMap: [1, 2]))  // WP saved the duck
        mixer.ready(with: [stream])
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(3)?.volume, user, "stream back at the user's level")
        XCTAssertEqual(mixer.memory[totem]?.volume, user, "memory at the user's level, not the stale 20000")
    }

    /// During the next duck the user turns totem up to 50000, and a second totem stream starts
    /// there, is ducked and set back to exactly 50000 (left to WirePlumber to save): what waits is
    /// then the user's level, which the server shows, so nothing stays journaled, and the next
    /// voiceboxd neither writes the older level over it nor announces an `ended`.
    func testAnEntryLeftToWirePlumberWithTheUsersNewLevelIsLetGo() async throws {
        await pendingAfterChecksRanOut()
        await nextStreamGivenOurDuck(late: true)
        await session.begin(.speaking, id: 2, policy: .duck)
        await pass(.seconds(3))
        mixer.userSets(3, volume: user)
        await pass(.seconds(3))
        mixer.play(PlaybackStream(id: 4, applicationName: "totem", processID: 202))
        mixer.applyMemory(to: 4)
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(4)?.volume, mixer.attenuate(user, byDecibels: -15))
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(4)?.volume, user)
        XCTAssertEqual(mixer.memory[totem]?.volume, user)
        for _ in 0..<20 { await pass(.seconds(10)) }
        XCTAssertNil(journal.current, "the entry waits no more")

        // The next voiceboxd.
        let memory = mixer.memory
        await killSession()
        await makeSession(info: Self.pipewire)
        for setting in memory.values { mixer.setMemory(setting) }
        mixer.ready()
        await pass(.seconds(3))
        XCTAssertEqual(mixer.memory[totem]?.volume, user, "the user's level survives the next start")
        XCTAssertEqual(interruptions().map(\.0), [], "no spurious ended")
    }

    /// A pause's put-back WirePlumber lost leaves Firefox's entry muted: Firefox's next stream,
    /// which the server starts muted, is unmuted, and stays so through the next pause.
    func testAStreamThatStartsFromAWaitingMuteIsUnmuted() async throws {
        await makeSession(info: Self.pipewire)
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200))
        await pass(.seconds(3))
        await session.begin(.speaking, id: 1, policy: .pause)
        mixer.remove(2)
        await settled()
        mixer.setMemory(RememberedSetting(name: firefox, muted: true, volume: [65536, 65536], channelMap: [1, 2]))
        mixer.fallBehind()
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        for _ in 0..<14 { await pass(.seconds(10)) }
        mixer.catchUp(losing: true)
        mixer.play(PlaybackStream(id: 3, applicationName: "Firefox", processID: 201))
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(3)?.muted, false, "started from our mute: unmuted")
        XCTAssertEqual(mixer.memory[firefox]?.muted, false)
        XCTAssertNil(journal.current)
        await session.begin(.speaking, id: 2, policy: .pause)
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(3)?.muted, false, "unmuted after the next pause")
        XCTAssertEqual(mixer.memory[firefox]?.muted, false)
    }

    /// PulseAudio refuses the put-back at the end (mpv's entry holds our duck, and waits); the user
    /// turns mpv's next stream up to 50000, which PulseAudio saves: the next duck reads that as the
    /// user's, puts it back, and nothing waits any more.
    func testPulseAudioAUserLevelSetWhileTheEntryWaitedSurvivesTheNextDuck() async throws {
        await pulseAudioRefusesThePutBack()
        XCTAssertEqual(journal.current?.memory.first?.before?.volume, [30000, 30000], "waiting")
        mixer.stopFailing("remember")
        mixer.play(PlaybackStream(id: 2, applicationName: "mpv", processID: 100))
        await settled()
        mixer.userSets(2, volume: user)
        await settled()
        XCTAssertEqual(mixer.memory[music]?.volume, user)
        await session.begin(.speaking, id: 2, policy: .duck)
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(2)?.volume, user)
        XCTAssertEqual(mixer.memory[music]?.volume, user, "the user's level, not the stale 30000")
        XCTAssertNil(journal.current, "no stale entry left to write at the next server return or start")
    }

    /// SIGTERM during the next duck: the stream is set back, and nothing is left journaled for the
    /// next voiceboxd (which would announce an `ended` no one began).
    func testSigtermDuringTheNextDuckLeavesNothingJournaled() async throws {
        await pendingAfterChecksRanOut()
        await nextStreamGivenOurDuck(late: false)
        await session.begin(.speaking, id: 2, policy: .duck)
        await session.finish()
        XCTAssertEqual(mixer.stream(3)?.volume, [20000, 20000])
        XCTAssertEqual(mixer.memory[totem]?.volume, [20000, 20000], "WirePlumber saved the set-back stream")
        XCTAssertNil(journal.current, "nothing left for the next voiceboxd")
    }

    /// A pause after a duck whose entry waits: the stream that started from our duck and the
    /// server's memory end at the user's level.
    func testAPauseAfterAWaitingDuckLeavesTheUsersLevel() async throws {
        await pendingAfterChecksRanOut()
        await nextStreamGivenOurDuck(late: false)
        await session.begin(.speaking, id: 2, policy: .pause)
        await session.end(.speaking, id: 2)
        await pass(.seconds(3))
        XCTAssertEqual(mixer.memory[totem]?.volume, [20000, 20000])
        XCTAssertEqual(mixer.stream(3)?.volume, [20000, 20000], "the user's level on the stream too")
        XCTAssertNil(journal.current)
    }

    /// A stream the next duck finds before the server gave it its entry (at the default level) is
    /// ducked; the server then gives it our old duck: it is ducked again from the user's level, and
    /// set back to it at the end, where the server keeps the user's level.
    func testAStreamGivenOurDuckJustAfterTheNextDuckBeganEndsAtTheUsersLevel() async throws {
        await pendingAfterChecksRanOut()
        mixer.applyMemoryLate()
        mixer.play(PlaybackStream(id: 3, applicationName: "totem", processID: 201))
        await settled()
        await session.begin(.speaking, id: 2, policy: .duck)
        await pass(.milliseconds(100))
        mixer.applyMemory(to: 3)
        await settled()
        XCTAssertEqual(mixer.stream(3)?.volume, mixer.attenuate([20000, 20000], byDecibels: -15), "ducked from the user's level")
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(3)?.volume, [20000, 20000])
        XCTAssertEqual(mixer.memory[totem]?.volume, [20000, 20000])
        await pass(.seconds(3))
        XCTAssertNil(journal.current)
    }

    /// PulseAudio goes away mid-duck and refuses the put-back at its return; the duck goes on
    /// (taking up the waiting entry: the new stream is ducked once, from the user's level) and
    /// ends with the server writable: the stream and the memory at the user's level, nothing journaled.
    func testPulseAudioRefusingThePutBackAtItsReturnLeavesNoTrace() async throws {
        await makeSession(info: Self.pulse)
        mixer.setMemory(RememberedSetting(name: music, volume: [30000, 30000], channelMap: [1, 2]))
        mixer.play(PlaybackStream(id: 1, applicationName: "mpv", processID: 100))
        await settled()
        await session.begin(.speaking, id: 1, policy: .duck)
        mixer.userSets(1, corked: true)  // PulseAudio saves our duck
        await settled()
        let ducked = mixer.attenuate([30000, 30000], byDecibels: -15)
        mixer.setMemory(RememberedSetting(name: music, volume: ducked, channelMap: [1, 2]))
        mixer.lost()
        await settled()
        mixer.fail("remember")
        mixer.ready(with: [PlaybackStream(id: 5, applicationName: "mpv", processID: 100)])
        await settled()
        XCTAssertEqual(journal.current?.memory.first { $0.name == music }?.before?.volume, [30000, 30000])
        XCTAssertEqual(mixer.stream(5)?.volume, ducked, "ducked from the user's level, not twice")
        mixer.stopFailing("remember")
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.memory[music]?.volume, [30000, 30000])
        XCTAssertEqual(mixer.stream(5)?.volume, [30000, 30000])
        XCTAssertNil(journal.current)
    }

    /// The cork trigger's entry (which did not exist before) cannot be deleted at the end: the next
    /// pause takes it up and deletes it.
    func testACorkTriggersEntryLeftIsDeletedByTheNextPause() async throws {
        let phone = "sink-input-by-media-role:phone"
        await makeSession(info: .init(name: "pulseaudio", version: "16.1", isPipeWire: false, roleCorkTriggers: ["phone"],
                                      roleCorkTargets: ["music"], memory: .readWrite))
        mixer.play(PlaybackStream(id: 1, applicationName: "paplay", processID: 100, role: "music"))
        await settled()
        await session.begin(.speaking, id: 1, policy: .pause)
        mixer.fail("forget")
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        XCTAssertNotNil(mixer.memory[phone])
        XCTAssertEqual(journal.current?.memory.first { $0.name == phone }.map { $0.before == nil }, true)
        mixer.stopFailing("forget")
        await session.begin(.speaking, id: 2, policy: .pause)
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertNil(mixer.memory[phone])
        XCTAssertNil(journal.current)
    }

    /// A pause muted Firefox (and totem, `alsoTotem`), closed; WirePlumber saved the mutes and
    /// lost the put-back; the checks ran out with the entries still waiting.
    private func mutePendingAfterChecksRanOut(alsoTotem: Bool = false) async {
        await makeSession(info: Self.pipewire)
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200))
        if alsoTotem { mixer.play(PlaybackStream(id: 3, applicationName: "totem", processID: 300)) }
        await pass(.seconds(3))
        await session.begin(.speaking, id: 1, policy: .pause)
        mixer.remove(2)
        if alsoTotem { mixer.remove(3) }
        await settled()
        mixer.setMemory(RememberedSetting(name: firefox, muted: true, volume: [65536, 65536], channelMap: [1, 2]))
        if alsoTotem { mixer.setMemory(RememberedSetting(name: totem, muted: true, volume: [65536, 65536], channelMap: [1, 2])) }
        mixer.fallBehind()
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        for _ in 0..<20 { await pass(.seconds(10)) }
        XCTAssertEqual(mixer.changes.filter { $0.hasPrefix("asked") }.count, 7, "the checks ran out")
        mixer.catchUp(losing: true)
    }

    /// Firefox's next stream (3) is given our old mute late (3 s: not repaired); the user unmutes
    /// it, and later mutes it on purpose. WirePlumber saves each.
    private func userMutesFirefoxWhileItsEntryWaits() async {
        mixer.applyMemoryLate()
        mixer.play(PlaybackStream(id: 3, applicationName: "Firefox", processID: 201))
        await pass(.seconds(3))
        mixer.applyMemory(to: 3)
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(3)?.muted, true, "our old mute, given late")
        mixer.userSets(3, muted: false)
        await pass(.seconds(5))
        mixer.userSets(3, muted: true)
        await pass(.seconds(5))
        XCTAssertEqual(mixer.memory[firefox]?.muted, true, "WirePlumber holds the user's mute")
    }

    /// The user mutes Firefox while its pause entry waits; Firefox's next stream starts muted
    /// from that: it must stay muted (it is the user's), and the server keep the mute.
    func testAUserMuteIsNotUndoneOnTheNextStreamWhileTheEntryWaits() async throws {
        await mutePendingAfterChecksRanOut()
        await userMutesFirefoxWhileItsEntryWaits()
        mixer.remove(3)
        mixer.play(PlaybackStream(id: 4, applicationName: "Firefox", processID: 201))
        mixer.applyMemory(to: 4)
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(4)?.muted, true, "the user's mute must not be undone")
        XCTAssertEqual(mixer.memory[firefox]?.muted, true, "the server must keep the user's mute")
    }

    /// The same user mute, then a duck: its end must leave the server holding the user's mute.
    func testAUserMuteSurvivesTheNextDuckWhileTheEntryWaits() async throws {
        await mutePendingAfterChecksRanOut()
        await userMutesFirefoxWhileItsEntryWaits()
        await session.begin(.speaking, id: 2, policy: .duck)
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(3)?.muted, true)
        XCTAssertEqual(mixer.memory[firefox]?.muted, true, "the server must keep the user's mute")
    }

    /// totem's entry waits (stereo); the user sets totem's mono stream to 30000, which WirePlumber
    /// saves. The next duck must leave that level, not write the older stereo one over it.
    func testAUserLevelOnAMonoStreamSurvivesTheNextDuck() async throws {
        await pendingAfterChecksRanOut()
        mixer.play(PlaybackStream(id: 3, applicationName: "totem", processID: 201, volume: [65536]))
        await pass(.seconds(3))
        mixer.userSets(3, volume: [30000])
        await pass(.seconds(3))
        XCTAssertEqual(mixer.memory[totem]?.volume, [30000])
        await session.begin(.speaking, id: 2, policy: .duck)
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(3)?.volume, [30000])
        XCTAssertEqual(mixer.memory[totem]?.volume, [30000], "the user's level, not the older stereo 20000")
    }

    /// PulseAudio: mpv's put-back is refused and waits; the user moves mpv to other speakers
    /// (module-stream-restore saves the device). The next duck must leave that device remembered.
    func testPulseAudioAUserDeviceSetWhileTheEntryWaitsSurvivesTheNextDuck() async throws {
        await pulseAudioRefusesThePutBack()
        XCTAssertNotNil(journal.current, "waiting")
        mixer.stopFailing("remember")
        mixer.play(PlaybackStream(id: 2, applicationName: "mpv", processID: 100))
        await pass(.seconds(3))
        // The user moves mpv's stream to the headphones: PulseAudio saves the device with its level.
        let level = try XCTUnwrap(mixer.stream(2)?.volume)
        mixer.setMemory(RememberedSetting(name: music, volume: level, channelMap: [1, 2], device: "headphones"))
        await session.begin(.speaking, id: 2, policy: .duck)
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.memory[music]?.device, "headphones", "the user's device choice must survive")
    }

    /// Firefox and totem entries wait (a pause's put-back lost). Firefox's next stream, id 7,
    /// starts muted and is unmuted; it closes and the server gives id 7 to totem's next stream,
    /// which starts muted from our pause too: it must be unmuted as well.
    func testARecycledStreamIndexIsRepairedToo() async throws {
        await mutePendingAfterChecksRanOut(alsoTotem: true)
        mixer.play(PlaybackStream(id: 7, applicationName: "Firefox", processID: 201))
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(7)?.muted, false, "repaired")
        mixer.remove(7)
        mixer.play(PlaybackStream(id: 7, applicationName: "totem", processID: 301))
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(7)?.muted, false, "totem must not be left muted by our old pause")
    }

    /// totem's entry waits (our old duck); during the next duck totem starts a stream, which
    /// the server starts from our old duck: it must stay ducked, never be raised to the user's
    /// level first (a burst at full level over Voicebox's speech), and get the user's level after.
    func testANewcomerFromOurDuckIsNotRaisedDuringTheNextDuck() async throws {
        await pendingAfterChecksRanOut()
        let ours = mixer.attenuate([20000, 20000], byDecibels: -15)
        await session.begin(.speaking, id: 2, policy: .duck)
        mixer.play(PlaybackStream(id: 4, applicationName: "totem", processID: 201))
        await settled()
        XCTAssertEqual(mixer.stream(4)?.volume, ours)
        XCTAssertFalse(mixer.changes.contains("volume 4 [20000, 20000]"), "raised mid-duck: \(mixer.changes.suffix(4))")
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(4)?.volume, [20000, 20000])
    }

    /// The same for a pause: a newcomer that starts from our waiting mute during the next
    /// pause must not be unmuted (a burst of it over Voicebox's speech), and is unmuted at its end.
    func testANewcomerFromOurMuteIsNotUnmutedDuringTheNextPause() async throws {
        await mutePendingAfterChecksRanOut()
        await session.begin(.speaking, id: 2, policy: .pause)
        mixer.play(PlaybackStream(id: 5, applicationName: "Firefox", processID: 201))
        await settled()
        XCTAssertEqual(mixer.stream(5)?.muted, true)
        XCTAssertFalse(mixer.changes.contains("mute 5 false"), "unmuted mid-pause: \(mixer.changes.suffix(4))")
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        XCTAssertEqual(mixer.stream(5)?.muted, false, "unmuted at the end")
    }
    /// totem's entry waits; its next stream gets our old duck late (not repaired); the user
    /// turns it up to 50000 (WirePlumber saves it) and no interruption follows. voiceboxd is
    /// restarted: the next one must not write the old 20000 over the user's level, nor announce
    /// an `ended` no one began.
    func testAUserLevelSetWhileTheEntryWaitsSurvivesARestart() async throws {
        await pendingAfterChecksRanOut()
        mixer.applyMemoryLate()
        mixer.play(PlaybackStream(id: 3, applicationName: "totem", processID: 201))
        await pass(.seconds(3))
        mixer.applyMemory(to: 3)
        await pass(.seconds(3))
        mixer.userSets(3, volume: [50000, 50000])
        await pass(.seconds(3))
        XCTAssertEqual(mixer.memory[totem]?.volume, [50000, 50000])
        await session.finish()
        let memory = mixer.memory
        let stream = try XCTUnwrap(mixer.stream(3))
        await killSession()
        await makeSession(info: Self.pipewire)
        for setting in memory.values { mixer.setMemory(setting) }
        mixer.ready(with: [stream])
        await pass(.seconds(3))
        XCTAssertEqual(mixer.memory[totem]?.volume, [50000, 50000], "the user's level must survive the restart")
        XCTAssertEqual(interruptions().map(\.0), [], "no spurious ended")
    }

    /// PulseAudio: mpv's put-back is refused and waits; mpv's next stream starts from our duck
    /// and is set back (PulseAudio saves the user's level, readable): nothing should stay journaled.
    func testPulseAudioARepairedEntryIsNotLeftJournaled() async throws {
        await pulseAudioRefusesThePutBack()
        mixer.stopFailing("remember")
        mixer.play(PlaybackStream(id: 2, applicationName: "mpv", processID: 100))
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(2)?.volume, [30000, 30000])
        XCTAssertEqual(mixer.memory[music]?.volume, [30000, 30000])
        for _ in 0..<20 { await pass(.seconds(10)) }
        XCTAssertNil(journal.current, "left journaled: the next voiceboxd announces an ended")
    }

    /// The report of our own set-back at the end of the next duck is not the user's change: the
    /// entry still waits until the server shows it saved; WirePlumber, busy, never saved it before
    /// totem closed the stream, so totem's next stream, which starts from our duck, is set back.
    func testOurOwnSetBackEventDoesNotDropAnEntryThatStillWaits() async throws {
        await pendingAfterChecksRanOut()
        let ours = mixer.attenuate([20000, 20000], byDecibels: -15)
        mixer.applyMemoryLate()
        mixer.play(PlaybackStream(id: 3, applicationName: "totem", processID: 201))
        await pass(.seconds(3))
        mixer.applyMemory(to: 3)
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(3)?.volume, ours)
        await session.begin(.speaking, id: 2, policy: .duck)
        await session.end(.speaking, id: 2)
        await pass(.milliseconds(500))  // set back at 300 ms; its event handled; first check due at 1.3 s
        XCTAssertEqual(mixer.stream(3)?.volume, [20000, 20000])
        // WirePlumber never saved the set-back before totem closed the stream: it still holds our duck.
        mixer.remove(3)
        mixer.setMemory(RememberedSetting(name: totem, volume: ours, channelMap: [1, 2]))
        await settled()
        XCTAssertNotNil(journal.current?.memory.first { $0.name == totem },
                        "dropped by the event of our own set-back: \(logged.withLock { $0 }.suffix(3))")
        mixer.play(PlaybackStream(id: 4, applicationName: "totem", processID: 202))
        mixer.applyMemory(to: 4)
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(4)?.volume, [20000, 20000], "totem left at our duck for good")
    }

    /// PulseAudio refused the put-back of the music role's entry (it holds our duck, and waits). A
    /// pause corks rhythmbox (music role) through module-role-cork, whose mute and unmute PulseAudio
    /// does not save: that unmute is not the user's setting, and the role's next stream, which
    /// starts from our duck, is set back.
    func testPulseAudioARoleCorkUnmuteDoesNotDropAWaitingEntry() async throws {
        await makeSession(info: .init(name: "pulseaudio", version: "16.1", isPipeWire: false, roleCorkTriggers: ["phone"],
                                      roleCorkTargets: ["music"], memory: .readWrite))
        mixer.setMemory(RememberedSetting(name: musicRole, volume: [30000, 30000], channelMap: [1, 2]))
        mixer.play(PlaybackStream(id: 1, applicationName: "paplay", processID: 100, role: "music"))
        mixer.play(PlaybackStream(id: 2, applicationName: "rhythmbox", processID: 200, role: "music", corked: true))
        await pass(.seconds(3))
        await session.begin(.speaking, id: 1, policy: .duck)
        mixer.fail("remember")
        mixer.userSets(1, corked: true)  // PulseAudio saves our duck; the write-back is refused
        mixer.remove(1)
        await settled()
        await session.end(.speaking, id: 1)
        await pass(.seconds(1))
        mixer.stopFailing("remember")
        let ducked = mixer.attenuate([30000, 30000], byDecibels: -15)
        XCTAssertEqual(mixer.memory[musicRole]?.volume, ducked)
        XCTAssertNotNil(journal.current?.memory.first { $0.name == musicRole }, "waiting")
        mixer.userSets(2, corked: false)  // rhythmbox plays (at 30000, from before)
        await pass(.seconds(3))
        await session.begin(.speaking, id: 2, policy: .pause)
        await settled()
        XCTAssertEqual(mixer.stream(2)?.muted, true, "corked by module-role-cork")
        await session.end(.speaking, id: 2)
        await pass(.seconds(1))
        // module-role-cork lets rhythmbox go when the trigger stops: its change event (not saved).
        mixer.play(try XCTUnwrap(mixer.stream(2)))
        await pass(.seconds(1))
        XCTAssertEqual(mixer.memory[musicRole]?.volume, ducked, "the server still holds our old duck")
        XCTAssertNotNil(journal.current?.memory.first { $0.name == musicRole },
                        "dropped as the user's: \(logged.withLock { $0 }.suffix(3))")
        mixer.play(PlaybackStream(id: 3, applicationName: "paplay", processID: 300, role: "music"))
        await pass(.seconds(3))
        XCTAssertEqual(mixer.stream(3)?.volume, [30000, 30000], "the music role left at our duck for good")
    }

    /// PulseAudio refused the put-back (mpv's entry holds our duck, and waits), and mpv's next
    /// stream could not be set back; the user turns it up to 50000, which PulseAudio saves: that is
    /// the user's setting, and a voiceboxd started next leaves it, announcing nothing.
    func testPulseAudioAUserLevelSetWhileTheEntryWaitsSurvivesARestart() async throws {
        await pulseAudioRefusesThePutBack()
        mixer.stopFailing("remember")
        mixer.fail("volume")
        mixer.play(PlaybackStream(id: 2, applicationName: "mpv", processID: 100))
        await pass(.seconds(3))
        XCTAssertNotNil(journal.current, "waiting")
        mixer.userSets(2, volume: user)
        await pass(.seconds(1))
        XCTAssertNil(journal.current, "the user's setting: nothing waits")
        await session.finish()
        let memory = mixer.memory
        await killSession()
        await makeSession(info: Self.pulse)
        for setting in memory.values { mixer.setMemory(setting) }
        mixer.ready()
        await pass(.seconds(1))
        XCTAssertEqual(mixer.memory[music]?.volume, user)
        XCTAssertEqual(interruptions().map(\.0), [])
    }
}
