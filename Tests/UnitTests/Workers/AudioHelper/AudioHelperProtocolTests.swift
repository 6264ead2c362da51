@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import XCTest

/// Every message of the audio helper protocol reads back as it was written, through the service's
/// own JSON coder, and frames carry samples exactly.
final class AudioHelperProtocolTests: XCTestCase {
    private func roundTrip<T: Codable>(_ value: T) throws -> T {
        try JSON.decode(T.self, from: try JSON.encode(value))
    }

    func testEveryCallAndOutcomeReadsBackAsWritten() throws {
        let setting = RememberedSetting(name: "sink-input-by-media-role:music", muted: true, volume: [1, 65536], channelMap: [1, 2],
                                        device: "ünïcode \"sink\"")
        let calls: [AudioHelperProtocol.Call] = [
            .serverInfo, .playbackStreams, .recordingStreams, .setMute(stream: 7, muted: true),
            .setVolume(stream: UInt32.max, volume: [0, 65536, UInt32.max]), .rememberedSettings, .remember([setting]),
            .forgetRemembered(["a", ""]), .startCorkTrigger(role: "phone"), .stopCorkTrigger,
            .openCapture(capture: 3, source: nil), .openCapture(capture: 4, source: "mic.monitor"),
            .setCaptureCorked(capture: 3, corked: false), .closeCapture(capture: 3), .ping,
        ]
        for call in calls {
            let request = try roundTrip(AudioHelperProtocol.Request(id: 42, call: call))
            XCTAssertEqual(request.id, 42)
            XCTAssertEqual("\(request.call)", "\(call)")
        }
        let info = SoundServerInfo(name: "PulseAudio (on PipeWire 0.3.65)", version: "15.0.0", isPipeWire: true,
                                   roleCorkTriggers: ["phone"], roleCorkTargets: ["music", "video"], memory: .writeOnly)
        let playback = PlaybackStream(id: 1, client: nil, applicationName: "mpv", processID: -1, role: nil, mediaName: "x",
                                      muted: true, volume: [1, 2, 3], corked: true, memoryKey: "k", channelMap: [0, 1, 2])
        let outcomes: [AudioHelperProtocol.Outcome] = [
            .done, .serverInfo(info), .playbackStreams([playback]), .recordingStreams([RecordingStream(id: 9, role: "phone")]),
            .rememberedSettings([setting]), .index(12), .mixerError(.noSuchStream(5)), .mixerError(.unavailable("gone")),
            .captureError(.noMicrophone("none")), .badRequest("?"),
        ]
        for outcome in outcomes {
            let answer = try roundTrip(AudioHelperProtocol.Answer(id: 1, outcome: outcome))
            XCTAssertEqual("\(answer.outcome)", "\(outcome)")
        }
        let events: [MixerEvent] = [.serverReady, .serverLost(reason: "r"), .playbackChanged(playback), .playbackRemoved(1),
                                    .recordingChanged(RecordingStream(id: 2)), .recordingRemoved(2), .rememberedChanged]
        for event in events { XCTAssertEqual(try roundTrip(event), event) }
        let end = try roundTrip(AudioHelperProtocol.CaptureEnd(capture: 3, failure: .serverUnavailable("x")))
        XCTAssertEqual(end.failure, .serverUnavailable("x"))
        XCTAssertNil(try roundTrip(AudioHelperProtocol.CaptureEnd(capture: 3, failure: nil)).failure)
    }

    func testSamplesFramesCarryTheirCaptureAndSamplesExactly() {
        let samples: [Int16] = [0, 1, -1, .max, .min, 12345]
        let frame = AudioHelperProtocol.samplesFrame(capture: 0xDEAD_BEEF, samples)
        XCTAssertEqual(frame.first, AudioHelperProtocol.Tag.samples.rawValue)
        let read = AudioHelperProtocol.samples(fromPayload: Array(frame.dropFirst(5)))
        XCTAssertEqual(read?.capture, 0xDEAD_BEEF)
        XCTAssertEqual(read?.samples, samples)
        XCTAssertNil(AudioHelperProtocol.samples(fromPayload: [1, 2, 3]))
        XCTAssertNil(AudioHelperProtocol.samples(fromPayload: [1, 2, 3, 4, 5]))
    }
}
