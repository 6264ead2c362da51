import Foundation
@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import VoiceboxPulse
import XCTest

/// Volume arithmetic and the server's memory of streams (module-stream-restore), against a private
/// PulseAudio, checked with pactl.
final class PulseMixerMemoryTests: XCTestCase {
    private func readyMixer(_ server: MixerTestServer) async throws -> (PulseMixer, MixerEventRecorder) {
        let mixer = try PulseMixer(server: server.address)
        let recorder = await MixerEventRecorder.start(mixer.events)
        let ready = await recorder.first { $0 == .serverReady }
        XCTAssertNotNil(ready, "no .serverReady")
        return (mixer, recorder)
    }

    /// -6, -15 and -30 dB as pactl shows them: on the cubic scale, not a linear factor (which
    /// would be -18, -45 and -90 dB).
    func testAttenuationIsTheDecibelsAsHeard() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        let (mixer, recorder) = try await readyMixer(server)
        let player = try server.play(role: nil)
        let added = await recorder.first { $0.playback?.processID == player.pid }
        let stream = try XCTUnwrap(added?.event.playback)
        for depth in [-6.0, -15.0, -30.0] {
            let lowered = mixer.attenuate(stream.volume, byDecibels: depth)
            try await mixer.setVolume(stream.id, lowered)
            let shown = try server.sinkInput(stream.id)
            XCTAssertTrue(shown.contains(String(format: "%.2f dB", depth)), "pactl shows \(depth) dB: \(shown)")
            XCTAssertEqual(PulseVolume.decibels(lowered[0]), depth, accuracy: 0.01)
            XCTAssertEqual(Double(PulseVolume.attenuate(lowered, byDecibels: -depth)[0]), Double(stream.volume[0]), accuracy: 2)
        }
    }

    func testWithoutModuleStreamRestoreNothingIsRemembered() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        let (mixer, _) = try await readyMixer(server)
        let info = try await mixer.serverInfo()
        XCTAssertEqual(info.memory, .nothing)
        do {
            _ = try await mixer.rememberedSettings()
            XCTFail("read from a server that remembers nothing")
        } catch {
            XCTAssertEqual(error as? MixerError, .unsupported("the sound server does not tell what it remembers of streams"))
        }
    }

    /// Read, write back and delete module-stream-restore's entries, and hear of its saves: a write
    /// changes the memory, not the stream playing; the next stream starts from what was written.
    func testTheMemoryIsReadWrittenBackAndDeleted() async throws {
        let server = try stopsAtEnd(MixerTestServer(extraModules: ["load-module module-stream-restore"]))
        let (mixer, recorder) = try await readyMixer(server)
        let info = try await mixer.serverInfo()
        XCTAssertEqual(info.memory, .readWrite)
        let player = try server.play(role: nil)
        let added = await recorder.first { $0.playback?.processID == player.pid }
        let stream = try XCTUnwrap(added?.event.playback)
        let key = try XCTUnwrap(stream.memoryKey)
        XCTAssertEqual(key, "sink-input-by-application-name:mixer-test")
        XCTAssertEqual(stream.channelMap, [1, 2], "front-left, front-right")
        let before = try await mixer.rememberedSettings().first { $0.name == key }
        XCTAssertEqual(before, RememberedSetting(name: key), "an entry that holds nothing yet")

        let mark = await recorder.count
        try server.pactl("set-sink-input-volume", "\(stream.id)", "30000")
        let saved = await recorder.first(after: mark) { $0 == .rememberedChanged }
        XCTAssertNotNil(saved, "the save is reported")
        let held = try await mixer.rememberedSettings().first { $0.name == key }
        XCTAssertEqual(held?.volume, [30000, 30000])

        try await mixer.remember([RememberedSetting(name: key, volume: [50000, 50000], channelMap: [1, 2])])
        let written = try await mixer.rememberedSettings().first { $0.name == key }
        XCTAssertEqual(written?.volume, [50000, 50000])
        XCTAssertTrue(try server.sinkInput(stream.id).contains("30000 /"), "the playing stream is left as it is")
        let next = try server.play(role: nil, name: "next")
        let nextAdded = await recorder.first { $0.playback?.processID == next.pid }
        XCTAssertEqual(nextAdded?.event.playback?.volume, [50000, 50000], "the next stream starts from what was written")

        try await mixer.remember([try XCTUnwrap(before)])
        let back = try await mixer.rememberedSettings().first { $0.name == key }
        XCTAssertEqual(back, before, "written back as it was: no volume")
        try await mixer.forgetRemembered([key])
        let gone = try await mixer.rememberedSettings().first { $0.name == key }
        XCTAssertNil(gone)
    }
}
