import Foundation
@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import VoiceboxPulse
import XCTest

/// PulseMixer against a private PulseAudio: what it lists, what events it reports, what its
/// mute and volume do, compared with what `pactl` says.
final class PulseMixerStreamTests: XCTestCase {
    private func readyMixer(_ server: MixerTestServer) async throws -> (PulseMixer, MixerEventRecorder) {
        let mixer = try PulseMixer(server: server.address)
        let recorder = await MixerEventRecorder.start(mixer.events)
        let ready = await recorder.first { $0 == .serverReady }
        XCTAssertNotNil(ready, "no .serverReady")
        return (mixer, recorder)
    }

    func testListsAPlaybackStreamWithItsRoleAndProcess() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        let (mixer, recorder) = try await readyMixer(server)
        let started = ContinuousClock.now
        let player = try server.play(role: "music", name: "listed")
        let event = await recorder.first { $0.playback?.processID == player.pid }
        let stream = try XCTUnwrap(event?.event.playback, "no playbackChanged for pacat")
        print("METRIC playbackChanged for a new pacat \(milliseconds(event!.at - started)) ms after spawning it")
        XCTAssertEqual(stream.role, "music")
        XCTAssertEqual(stream.mediaName, "listed")
        XCTAssertEqual(stream.applicationName, "mixer-test")
        XCTAssertNotNil(stream.client)
        XCTAssertFalse(stream.muted)
        XCTAssertEqual(stream.volume, [65536, 65536])

        let listed = try await mixer.playbackStreams()
        let ours = try XCTUnwrap(listed.first { $0.id == stream.id }, "\(listed)")
        XCTAssertEqual(ours.processID, player.pid)
        XCTAssertEqual(ours.role, "music")
        XCTAssertEqual(ours.client, stream.client)
        XCTAssertTrue(try server.sinkInput(stream.id).contains("media.role = \"music\""))
        let recordings = try await mixer.recordingStreams()
        XCTAssertEqual(recordings, [])
    }

    func testEventsForMuteVolumeAndRemoval() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        let (mixer, recorder) = try await readyMixer(server)
        defer { withExtendedLifetime(mixer) {} }  // a dropped mixer shuts down
        let player = try server.play(role: "video")
        let added = await recorder.first { $0.playback?.processID == player.pid }
        let index = try XCTUnwrap(added?.event.playback?.id)

        var mark = await recorder.count, sent = ContinuousClock.now
        try server.pactl("set-sink-input-mute", "\(index)", "1")
        let muted = await recorder.first(after: mark) { $0.playback?.id == index && $0.playback?.muted == true }
        XCTAssertNotNil(muted, "no event for the mute")
        print("METRIC mute event \(milliseconds((muted?.at ?? sent) - sent)) ms after pactl was started")

        mark = await recorder.count
        sent = ContinuousClock.now
        try server.pactl("set-sink-input-volume", "\(index)", "50%")
        let volume = await recorder.first(after: mark) { $0.playback?.id == index && $0.playback?.volume == [32768, 32768] }
        XCTAssertNotNil(volume)
        print("METRIC volume event \(milliseconds((volume?.at ?? sent) - sent)) ms after pactl was started")

        mark = await recorder.count
        sent = ContinuousClock.now
        player.signal(SIGTERM)
        let removed = await recorder.first(after: mark) { $0 == .playbackRemoved(index) }
        XCTAssertNotNil(removed)
        print("METRIC playbackRemoved \(milliseconds((removed?.at ?? sent) - sent)) ms after SIGTERM to pacat")
        // Nothing about the stream after its removal.
        try await Task.sleep(for: .milliseconds(200))  // an event, if one came, would be here by now
        let after = await recorder.arrivals.drop { $0.event != .playbackRemoved(index) }.dropFirst()
        XCTAssertFalse(after.contains { $0.event.playback?.id == index }, "\(after.map(\.event))")
    }

    func testSetMuteAndSetVolumeChangeWhatPactlShows() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        let (mixer, recorder) = try await readyMixer(server)
        let player = try server.play(role: "music")
        let added = await recorder.first { $0.playback?.processID == player.pid }
        let index = try XCTUnwrap(added?.event.playback?.id)

        var started = ContinuousClock.now
        try await mixer.setMute(index, true)
        print("METRIC setMute answered in \(milliseconds(ContinuousClock.now - started)) ms")
        let mutedBlock = try server.sinkInput(index)
        XCTAssertTrue(mutedBlock.contains("Mute: yes"), mutedBlock)
        try await mixer.setMute(index, false)
        XCTAssertTrue(try server.sinkInput(index).contains("Mute: no"))

        started = ContinuousClock.now
        try await mixer.setVolume(index, [30000, 40000])
        print("METRIC setVolume answered in \(milliseconds(ContinuousClock.now - started)) ms")
        let shown = try server.sinkInput(index)
        XCTAssertTrue(shown.contains("front-left: 30000 /") && shown.contains("front-right: 40000 /"), shown)
        let listed = try await mixer.playbackStreams().first { $0.id == index }
        XCTAssertEqual(listed?.volume, [30000, 40000])
        XCTAssertEqual(listed?.muted, false)
    }

    func testUnknownStreamIsNoSuchStreamAndAWrongChannelCountFails() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        let (mixer, recorder) = try await readyMixer(server)
        for call in [{ try await mixer.setMute(99_999, true) }, { try await mixer.setVolume(99_999, [1000, 1000]) }] {
            do {
                try await call()
                XCTFail("changed a stream that does not exist")
            } catch let error as MixerError {
                XCTAssertEqual(error, .noSuchStream(99_999))
            }
        }
        let player = try server.play(role: "music")
        let added = await recorder.first { $0.playback?.processID == player.pid }
        let index = try XCTUnwrap(added?.event.playback?.id)
        do {
            try await mixer.setVolume(index, [1000, 1000, 1000])
            XCTFail("a stereo stream took three channel volumes")
        } catch MixerError.failed(let reason) {
            print("METRIC three volumes for a stereo stream: \(reason)")
        }
    }

    func testRecordingStreamIsListedWithItsRole() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        let (mixer, recorder) = try await readyMixer(server)
        let recording = try server.record(role: "production")
        let event = await recorder.first { $0.recording?.processID == recording.pid }
        let stream = try XCTUnwrap(event?.event.recording, "no recordingChanged")
        XCTAssertEqual(stream.role, "production")
        XCTAssertEqual(stream.applicationName, "mixer-test-rec")
        let listed = try await mixer.recordingStreams()
        XCTAssertEqual(listed.first { $0.id == stream.id }?.role, "production")
        XCTAssertEqual(listed.first { $0.id == stream.id }?.processID, recording.pid)
        let playback = try await mixer.playbackStreams()
        XCTAssertFalse(playback.contains { $0.processID == recording.pid })

        let mark = await recorder.count
        recording.signal(SIGTERM)
        let removed = await recorder.first(after: mark) { $0 == .recordingRemoved(stream.id) }
        XCTAssertNotNil(removed)
    }
}
