@testable import TestSupport
import VoiceboxThreads
import XCTest
@testable import VoiceboxCore

/// The small pure parts of recognition.
final class RecognitionPiecesTests: XCTestCase {
    /// Recognize's whole policy is in its options: a caller inside a sandbox names no file (it passes
    /// it open), and the sandbox is looked up only when a file is named.
    func testASandboxedCallerNamesNoFileAndTheSandboxIsAskedOnlyForAFile() async throws {
        let asked = Locked(0)
        let flatpak: () async -> String? = { asked.withLock { $0 += 1 }; return "a Flatpak sandbox" }
        do {
            _ = try await RecognizeOptions(["file": .string("/home/user/secret.wav")], callerSandbox: flatpak)
            XCTFail("a sandboxed caller named a file")
        } catch {
            XCTAssertEqual(error.kind, .accessDenied)
            XCTAssertTrue(error.message.contains("a Flatpak sandbox"), error.message)
        }
        XCTAssertEqual(asked.withLock { $0 }, 1)
        let passed = try await RecognizeOptions(["fd": .descriptor(7)], callerSandbox: flatpak)
        XCTAssertEqual(passed.input, .descriptor(7))
        _ = try await RecognizeOptions(["stream": .descriptor(9)], callerSandbox: flatpak)
        _ = try await RecognizeOptions([:], callerSandbox: flatpak)
        XCTAssertEqual(asked.withLock { $0 }, 1, "the sandbox was looked up for a call that names no file")
        let outside = try await RecognizeOptions(["file": .string("/x.wav")]) { nil }
        XCTAssertEqual(outside.input, .file("/x.wav"))
    }

    func testOptionDefaultsDifferForTheMicrophoneAndFiles() throws {
        let mic = try RecognizeOptions([:])
        XCTAssertEqual(mic.input, .microphone(source: nil))
        XCTAssertEqual(mic.maxSeconds, 30)
        XCTAssertEqual(mic.silenceSeconds, 1)
        XCTAssertEqual(mic.language, "en-US")
        XCTAssertEqual(mic.hint, .dictation)
        let file = try RecognizeOptions(["file": .string("/x.wav")])
        XCTAssertEqual(file.input, .file("/x.wav"))
        XCTAssertNil(file.maxSeconds, "a file is read to its end")
        let source = try RecognizeOptions(["source": .string("mic2"), "max_seconds": .double(5)])
        XCTAssertEqual(source.input, .microphone(source: "mic2"))
        XCTAssertEqual(source.maxSeconds, 5)
        let passed = try RecognizeOptions(["fd": .descriptor(7)])
        XCTAssertEqual(passed.input, .descriptor(7))
        XCTAssertNil(passed.maxSeconds, "a passed file is read to its end too")
        XCTAssertFalse(passed.isMicrophone)
        let stream = try RecognizeOptions(["stream": .descriptor(9)])
        XCTAssertEqual(stream.input, .stream(StreamInput(descriptor: 9, encoding: .s16le, rate: 16_000, channels: 1, idleSeconds: 10)))
        XCTAssertNil(stream.maxSeconds, "a stream is read to its end")
        XCTAssertFalse(stream.endsAtSilence, "without silence_seconds, as a file")
        XCTAssertNil(stream.others, "other audio is left alone")
        XCTAssertFalse(stream.isMicrophone)
        let live = try RecognizeOptions(["stream": .descriptor(9), "stream_format": .string("f32le"), "stream_rate": .uint32(48_000),
                                         "stream_channels": .uint32(2), "stream_idle_seconds": .double(2),
                                         "silence_seconds": .double(0.5), "others": .string("duck"), "max_seconds": .double(20)])
        XCTAssertEqual(live.input, .stream(StreamInput(descriptor: 9, encoding: .f32le, rate: 48_000, channels: 2, idleSeconds: 2)))
        XCTAssertTrue(live.endsAtSilence)
        XCTAssertEqual(live.silenceSeconds, 0.5)
        XCTAssertEqual(live.others, .duck)
        XCTAssertEqual(live.maxSeconds, 20)
    }

    func testBadOptionsNameTheirKey() {
        let cases: [([String: OptionValue], String)] = [
            (["nope": .bool(true)], "'nope'"),
            (["file": .double(1)], "'file'"),
            (["file": .string("/a"), "source": .string("b")], "'source'"),
            (["file": .string("a.wav")], "absolute"),
            (["file": .string("/a"), "silence_seconds": .double(1)], "'silence_seconds'"),
            (["source": .string("")], "'source'"),
            (["max_seconds": .double(0.01)], "'max_seconds'"),
            (["max_seconds": .double(.nan)], "'max_seconds'"),
            (["silence_seconds": .double(-1)], "'silence_seconds'"),
            (["language": .string("english please")], "'language'"),
            (["hint": .string("shout")], "'hint'"),
            (["grammar": .string("g"), "keyphrases": .strings(["a"])], "'keyphrases'"),
            (["hint": .string("confirmation"), "keyphrases": .strings(["a"])], "'hint'"),
            (["grammar": .string("  ")], "'grammar'"),
            (["keyphrases": .strings([])], "'keyphrases'"),
            (["keyphrases": .strings(["a/b"])], "'keyphrases'"),
            (["partial_results": .other(signature: "i")], "'partial_results'"),
            (["fd": .descriptor(7), "file": .string("/a")], "'fd'"),
            (["fd": .descriptor(7), "source": .string("b")], "'fd'"),
            (["fd": .string("/a")], "'fd'"),
            (["fd": .descriptor(7), "silence_seconds": .double(1)], "'silence_seconds'"),
            (["stream": .descriptor(7), "fd": .descriptor(8)], "'stream'"),
            (["stream": .descriptor(7), "file": .string("/a")], "'stream'"),
            (["stream": .descriptor(7), "source": .string("b")], "'stream'"),
            (["stream": .string("/a")], "'stream' must be of type h"),
            (["stream": .descriptor(7), "dictation": .bool(true)], "'dictation'"),
            (["stream": .descriptor(7), "stream_format": .string("u8")], "'stream_format'"),
            (["stream": .descriptor(7), "stream_rate": .uint32(7_999)], "'stream_rate'"),
            (["stream": .descriptor(7), "stream_rate": .uint32(48_001)], "'stream_rate'"),
            (["stream": .descriptor(7), "stream_rate": .double(16_000)], "'stream_rate' must be of type u, not d"),
            (["stream": .descriptor(7), "stream_channels": .uint32(0)], "'stream_channels'"),
            (["stream": .descriptor(7), "stream_channels": .uint32(9)], "'stream_channels'"),
            (["stream": .descriptor(7), "stream_idle_seconds": .double(0)], "'stream_idle_seconds'"),
            (["stream_format": .string("s16le")], "'stream_format' describes option 'stream', which is missing"),
            (["stream_rate": .uint32(16_000), "file": .string("/a")], "'stream_rate'"),
        ]
        for (options, mention) in cases {
            do {
                _ = try RecognizeOptions(options)
                XCTFail("\(options) was accepted")
            } catch {
                XCTAssert(error.message.contains(mention), "\(options): '\(error.message)' lacks \(mention)")
            }
        }
    }

    func testWarmUpDropsAFalseStartButKeepsSpeechThatOutlastsIt() {
        var warmUp = DetectorWarmUp(seconds: 1)
        let early = [true, true, false, false].map { warmUp.feed(inSpeech: $0, seconds: 0.2) }
        XCTAssertEqual(early.map(\.inSpeech), [false, false, false, false])
        XCTAssertEqual(early.map(\.discard), [false, false, true, false])
        XCTAssertEqual(warmUp.feed(inSpeech: false, seconds: 0.2).inSpeech, false)
        XCTAssertEqual(warmUp.feed(inSpeech: true, seconds: 0.2).inSpeech, true, "after the warm-up speech counts")

        var long = DetectorWarmUp(seconds: 1)
        let reports = (0..<8).map { _ in long.feed(inSpeech: true, seconds: 0.2) }
        XCTAssertEqual(reports.map(\.inSpeech), [false, false, false, false, false, true, true, true])
        XCTAssertFalse(reports.contains { $0.discard }, "speech going on at the end of the warm-up is kept")

        var none = DetectorWarmUp(seconds: 0)
        XCTAssertEqual(none.feed(inSpeech: true, seconds: 0.1).inSpeech, true)
    }

    func testPartialsOnlyWhenChangedAndAtMostTenASecond() {
        var reporter = PartialReporter()
        let start = ContinuousClock.now
        XCTAssertTrue(reporter.shouldSend("go", at: start))
        XCTAssertFalse(reporter.shouldSend("go forward", at: start + .milliseconds(50)), "too soon")
        XCTAssertTrue(reporter.shouldSend("go forward", at: start + .milliseconds(120)))
        XCTAssertFalse(reporter.shouldSend("go forward", at: start + .milliseconds(500)), "unchanged")
        XCTAssertTrue(reporter.shouldSend("go forward ten", at: start + .milliseconds(510)))
    }

    func testRateLimiter() {
        var limiter = RateLimiter(perSecond: 10)
        let start = ContinuousClock.now
        let allowed = (0..<20).map { limiter.allow(at: start + .milliseconds(25 * $0)) }
        XCTAssertEqual(allowed.filter { $0 }.count, 5, "0, 100, 200, 300, 400 ms")
    }

    func testLevelMeterIsLogarithmicAndReadsThePeakOfAWindow() {
        XCTAssertEqual(LevelMeter.level(rms: 0), 0)
        XCTAssertEqual(LevelMeter.level(rms: 32768), 1, accuracy: 1e-9)
        XCTAssertEqual(LevelMeter.level(rms: 32768 / 1000), 0, accuracy: 1e-3, "-60 dB → 0")
        XCTAssertEqual(LevelMeter.level(rms: 32768 * 0.0316227766), 0.5, accuracy: 1e-6, "-30 dB → 0.5")
        var meter = LevelMeter()
        meter.add([Int16](repeating: 3277, count: 100))
        meter.add([Int16](repeating: 0, count: 100))
        XCTAssertEqual(meter.read(), LevelMeter.level(rms: 3277), accuracy: 1e-9)
        XCTAssertEqual(meter.read(), 0, "a new window")
    }

    func testDitherIsFaintAndDeterministic() {
        var a = Dither(), b = Dither()
        var first = [Int16](repeating: 0, count: 10_000), second = first
        a.apply(&first)
        b.apply(&second)
        XCTAssertEqual(first, second)
        XCTAssertEqual(Set(first), [0, 1])
        XCTAssertEqual(Double(first.filter { $0 == 1 }.count) / 10_000, 0.25, accuracy: 0.03)
        var top: [Int16] = [.max]
        a.apply(&top)
        XCTAssertEqual(top, [.max], "no overflow")
    }

    func testLanguageMatching() {
        let available = ["de-DE", "en-US"]
        XCTAssertEqual(RecognitionLanguageMatching.best(for: "EN-us", among: available), "en-US")
        XCTAssertEqual(RecognitionLanguageMatching.best(for: "en-GB", among: available), "en-US")
        XCTAssertEqual(RecognitionLanguageMatching.best(for: "de", among: available), "de-DE")
        XCTAssertNil(RecognitionLanguageMatching.best(for: "fr-FR", among: available))
    }
}
