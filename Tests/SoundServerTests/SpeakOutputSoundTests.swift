import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import XCTest

/// Speak with `output` where the sound server has its say: nothing is played on the sink while a
/// file is written, and no other stream is ducked for it (where the same text played ducks it).
final class SpeakOutputSoundTests: ServiceTestCase {
    /// Each test ends what it started (its speech finished, its stream stopped): one voiceboxd serves both.
    override class var sharesService: Bool { true }
    static let voice = SpielClient.voice
    static let marked = "<speak>Written <mark name=\"a\"/>into a file. <mark name=\"b\"/>Nobody hears it.</speak>"

    func temporaryFile() throws -> (path: String, fd: Int32) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-output-\(UUID().uuidString).wav").path
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        addTeardownBlock { close(fd); unlink(path) }
        return (path, fd)
    }

    /// A file: a WAV whose sizes were written in, of espeak-ng's audio; SpeechStarted, the marks in
    /// order and SpeechFinished as for played speech, `wait` answered after them; and nothing on
    /// the sink meanwhile, Speaking never true.
    // What the sound server decides here: it listens to the sink's monitor for anything played
    func testAFileGetsAWAVOfEspeakNgsAudioTheSignalsAndTheSinkStaysSilent() async throws {
        let ears = try stopsAtEnd(MonitorRecorder(device: stack.sink + ".monitor"))
        try await ears.waitUntilRecording()
        let before = ears.seconds
        let (path, fd) = try temporaryFile()
        let id = try await service.speak(Self.marked, ["output": .unixFD(fd), "wait": .boolean(true), "ssml": .boolean(true),
                                                       "voice": .string(Self.voice)])
        XCTAssertEqual(service.events(of: id), ["SpeechStarted", "SpeechMark:a", "SpeechMark:b", "SpeechFinished:done"])
        let file = Array(try Data(contentsOf: URL(fileURLWithPath: path)))
        let wav = try SpeechAudio.wav(file)
        XCTAssertEqual(Int(wav.dataSize), file.count - 44, "the data size written in")
        XCTAssertEqual(wav.riffSize, wav.dataSize + 36)
        XCTAssertEqual(wav.channels, 1)
        XCTAssertEqual(wav.bits, 16)
        wav.audio.assertMatches(try SpeechAudio.espeak(Self.marked, ssml: true), "the file")
        try await Task.sleep(for: .milliseconds(700))
        XCTAssertLessThan(ears.rms(from: before), 50, "something was played while the file was written")
        XCTAssertFalse(service.signals.contains { $0.member == "AudioInterruption" })
        let speaking = try await service.property("Speaking")
        XCTAssertEqual(speaking, .boolean(false))
    }

    /// Other audio is left alone: a stream playing on the sink keeps its volume and is never
    /// muted, and no AudioInterruption comes, where played speech (the same text, the same
    /// default policy) ducks it.
    // What the sound server decides here: the stream's volume and mute are what the sound server shows
    func testNoOtherAudioIsDuckedOrPausedForAFile() async throws {
        let stream = try PlayingStream(sink: stack.sink, role: nil)
        addTeardownBlock { await stream.stop() }
        let settled = try await stream.settledState()
        let (_, fd) = try temporaryFile()
        let text = Texts.long + " " + Texts.long
        let id = try await service.speak(text, ["output": .unixFD(fd), "voice": .string(Self.voice)])
        var seen: [ServerStream] = []
        try await waitUntil("the file to be written") {
            if let state = stream.state { seen.append(state) }
            return self.service.events(of: id).contains { $0.hasPrefix("SpeechFinished") }
        }
        XCTAssertEqual(service.events(of: id).last, "SpeechFinished:done")
        XCTAssertTrue(seen.allSatisfy { $0.volume == settled.volume && !$0.muted }, "the stream changed: \(seen)")
        XCTAssertFalse(service.signals.contains { $0.member == "AudioInterruption" })
        // The same text played ducks the stream: the check above can fail.
        let played = try await service.speak("Played, this ducks.", ["voice": .string(Self.voice)])
        _ = try await service.waitForFinish(played)
        XCTAssertTrue(service.signals.contains { $0.member == "AudioInterruption" }, "played speech did not duck")
    }
}
