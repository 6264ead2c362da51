import Foundation
@testable import TestSupport
import VoiceboxCore
import VoiceboxPulse
import XCTest

/// module-role-cork on a real PulseAudio: what serverInfo reports of it, and what our silent
/// trigger stream does to a music player while it plays.
final class PulseMixerRoleCorkTests: XCTestCase {
    func testModuleLoadedAtRunTimeShowsInServerInfo() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        let mixer = try PulseMixer(server: server.address)
        let before = try await mixer.serverInfo()
        XCTAssertFalse(before.hasRoleCork)
        // A module event must make the mixer read the modules again (its info is cached).
        try server.pactl("load-module", "module-role-cork", "trigger_roles=a11y,phone", "global=true")
        let seen = await waitUntil(.seconds(10)) { (try? await mixer.serverInfo().roleCorkTriggers) == ["a11y", "phone"] }
        let loaded = try await mixer.serverInfo()
        XCTAssertTrue(seen, "serverInfo: \(loaded)")
        XCTAssertEqual(loaded.roleCorkTargets, ["music", "video"])
        try server.pactl("unload-module", "module-role-cork")
        let gone = await waitUntil(.seconds(10)) { (try? await mixer.serverInfo().hasRoleCork) == false }
        XCTAssertTrue(gone)
    }

    func testTriggerCorksAMusicStreamAndStopRestoresIt() async throws {
        let server = try stopsAtEnd(MixerTestServer(extraModules: ["load-module module-role-cork"]))
        let mixer = try PulseMixer(server: server.address)
        let recorder = await MixerEventRecorder.start(mixer.events)
        let info = try await mixer.serverInfo()
        XCTAssertEqual(info.roleCorkTriggers, ["phone"])
        XCTAssertEqual(info.roleCorkTargets, ["music", "video"])

        let player = try server.play(role: "music")
        let added = await recorder.first { $0.playback?.processID == player.pid }
        let music = try XCTUnwrap(added?.event.playback?.id)
        let playing = await waitUntil(.seconds(10)) { (try? server.sinkInput(music).contains("Corked: no")) == true }
        XCTAssertTrue(playing, "the music stream is not playing")

        var mark = await recorder.count
        let started = ContinuousClock.now
        let trigger = try await mixer.startCorkTrigger(role: "phone")
        let triggerReady = ContinuousClock.now
        let shown = try server.sinkInput(trigger)
        XCTAssertTrue(shown.contains("media.role = \"phone\""), shown)
        XCTAssertTrue(shown.contains("application.name = \"Voicebox\""), shown)
        XCTAssertTrue(shown.contains("media.name = \"Voicebox session\""), shown)
        let listed = try await mixer.playbackStreams()
        XCTAssertEqual(listed.first { $0.id == trigger }?.role, "phone")
        let again = try await mixer.startCorkTrigger(role: "phone")
        XCTAssertEqual(again, trigger, "a second start with the same role is the same stream")

        let corked = await recorder.first(after: mark) { $0.playback?.id == music && $0.playback?.corked == true }
        XCTAssertNotNil(corked)
        let pactlShows = try server.sinkInput(music)
        let mutedFirst = await recorder.first(after: mark) { $0.playback?.id == music && $0.playback?.muted == true }
        print("METRIC trigger ready \(milliseconds(triggerReady - started)) ms after start; music corked "
              + "\(milliseconds((corked?.at ?? started) - started)) ms after start, muted "
              + "\(milliseconds((mutedFirst?.at ?? started) - started)) ms; pactl: "
              + pactlShows.split(separator: "\n").filter { $0.contains("Corked") || $0.contains("Mute") }.joined(separator: ","))
        let seen = await recorder.arrivals.dropFirst(mark).compactMap { arrival in
            arrival.event.playback.flatMap { $0.id == music ? "+\(milliseconds(arrival.at - started))ms muted=\($0.muted) corked=\($0.corked)" : nil }
        }
        print("METRIC the music stream's events after the trigger started: \(seen)")
        XCTAssertTrue(pactlShows.contains("Corked: yes"), pactlShows)
        XCTAssertTrue(pactlShows.contains("Mute: yes"), pactlShows)

        mark = await recorder.count
        let stopping = ContinuousClock.now
        await mixer.stopCorkTrigger()
        print("METRIC stopCorkTrigger returned after \(milliseconds(ContinuousClock.now - stopping)) ms")
        XCTAssertEqual(try server.sinkInput(trigger), "", "the trigger stream outlived stopCorkTrigger")
        let restored = await recorder.first(after: mark) {
            $0.playback?.id == music && $0.playback?.corked == false && $0.playback?.muted == false
        }
        XCTAssertNotNil(restored)
        print("METRIC music uncorked and unmuted \(milliseconds((restored?.at ?? stopping) - stopping)) ms after stop")
        let after = try server.sinkInput(music)
        XCTAssertTrue(after.contains("Corked: no") && after.contains("Mute: no"), after)
        await mixer.stopCorkTrigger()  // idempotent
    }

    func testTriggerWithARoleThatCorksNothingLeavesMusicAlone() async throws {
        let server = try stopsAtEnd(MixerTestServer(extraModules: ["load-module module-role-cork"]))
        let mixer = try PulseMixer(server: server.address)
        let recorder = await MixerEventRecorder.start(mixer.events)
        // Streams that exist before the subscription have no "new" event: connect first.
        let ready = await recorder.first { $0 == .serverReady }
        XCTAssertNotNil(ready)
        let player = try server.play(role: "music")
        let added = await recorder.first { $0.playback?.processID == player.pid }
        let music = try XCTUnwrap(added?.event.playback?.id)
        // Two callers at once get the one stream.
        async let first = mixer.startCorkTrigger(role: "a11y")
        async let second = mixer.startCorkTrigger(role: "a11y")
        let (one, other) = try await (first, second)
        XCTAssertEqual(one, other)
        let triggers = try await mixer.playbackStreams().filter { $0.applicationName == "Voicebox" }
        XCTAssertEqual(triggers.map(\.id), [one])
        try await Task.sleep(for: .milliseconds(300))  // a cork, if one came, would be seen by now
        let shown = try server.sinkInput(music)
        XCTAssertTrue(shown.contains("Corked: no") && shown.contains("Mute: no"), shown)
        await mixer.stopCorkTrigger()
    }
}
