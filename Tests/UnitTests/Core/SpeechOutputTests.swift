import VoiceboxContract
import VoiceboxCore
import XCTest

/// Speak with `output` over a scripted synthesizer and renderer: written, not played, with the
/// signals of played speech; stopped by StopSpeaking, not by StopAllSpeaking.
final class SpeechOutputTests: XCTestCase {
    var synthesizer: ScriptedSynthesizer!
    var renderer: ScriptedRenderer!
    var bus: RecordingBus!
    var service: SpeechService!
    var events: Task<Void, Never>!

    override func setUp() async throws {
        synthesizer = ScriptedSynthesizer(voices: ScriptedSynthesizer.englishVoices
                                          + [Voice(id: "generic/Flite", name: "Flite", language: "en", variant: "none", engine: "generic")])
        renderer = ScriptedRenderer()
        bus = RecordingBus()
        service = SpeechService(synthesizer: synthesizer, bus: bus, renderer: renderer, renderQueue: RenderQueue(renderer: renderer))
        await service.start()
        let service = service!
        events = Task { await service.run() }
    }

    override func tearDown() async throws { events.cancel() }

    func speak(_ text: String, _ options: [String: OptionValue]) async throws(VoiceboxError) -> UInt64 {
        let pipe = TestPipe()
        defer { pipe.close() }
        var options = options
        options["output"] = .descriptor(pipe.write)
        return try await service.admit(text, options: SpeakOptions(options), caller: ":1.1")
    }

    func testItIsWrittenNotPlayedWithTheSignalsOfPlayedSpeech() async throws {
        let id = try await speak("<speak>a <mark name=\"m\"/>b</speak>", ["ssml": .bool(true), "rate": .double(2), "pitch": .double(2),
                                                                        "volume": .double(0.5)])
        XCTAssertTrue(synthesizer.commands.isEmpty, "it reached speech-dispatcher")
        let started = try XCTUnwrap(renderer.started.first)
        XCTAssertEqual(started.target.encoding, .wav(seekable: false))
        XCTAssertEqual(started.request.rate, 2)
        XCTAssertEqual(started.request.pitch, 100)
        XCTAssertEqual(started.request.volume, -50)
        XCTAssertNil(started.request.voiceName)
        let outcome = Task { [service] in try await service!.outcome(of: id) }
        started.events(.began)
        started.events(.mark("m"))
        renderer.end(id)
        let answered = try await outcome.value
        XCTAssertEqual(answered, id)
        let bus = bus!
        try await settle { bus.signals.contains(.speechFinished(id, .done)) }
        XCTAssertEqual(bus.signals.filter { $0 != .voicesChanged }, [.speechStarted(id), .speechMark(id, "m"), .speechFinished(id, .done)])
        XCTAssertFalse(bus.properties.contains(.speaking(true)), "Speaking is about what is heard")
    }

    func testStopSpeakingStopsItStopAllSpeakingLeavesIt() async throws {
        let id = try await speak("long", [:])
        await service.stopAllSpeaking()
        XCTAssertNotEqual(renderer.started[0].target.descriptor.fd, -1, "StopAllSpeaking stopped a file")
        await service.stopSpeaking(id, caller: ":1.1")
        let bus = bus!
        try await settle { bus.signals.contains(.speechFinished(id, .cancelled)) }
    }

    func testAVoiceThatOnlyPlaysAndOthersAreRefused() async {
        do {
            _ = try await speak("x", ["voice": .string("generic/Flite")])
            XCTFail("a voice whose engine only plays")
        } catch {
            XCTAssertEqual(error.kind, .invalidArgument)
        }
        do {
            _ = try await speak("x", ["others": .string("duck")])
            XCTFail("others with output")
        } catch {
            XCTAssertEqual(error.kind, .invalidArgument)
        }
        XCTAssertTrue(renderer.started.isEmpty)
    }
}
