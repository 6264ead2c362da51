@testable import TestSupport
@testable import VoiceboxCore
import VoiceboxContract
import XCTest

/// SpeechService over a scripted synthesizer and a recording bus: the behaviour behind the
/// speaking methods, without speech-dispatcher.
final class SpeechServiceTests: XCTestCase {
    var synthesizer: ScriptedSynthesizer!
    var bus: RecordingBus!
    var service: SpeechService!
    var events: Task<Void, Never>!

    override func setUp() async throws {
        synthesizer = ScriptedSynthesizer()
        bus = RecordingBus()
        service = SpeechService(synthesizer: synthesizer, bus: bus)
        await service.start()
        let service = service!
        events = Task { await service.run() }
    }

    override func tearDown() async throws {
        events.cancel()
    }

    private func speak(_ text: String = "hello", _ options: [String: OptionValue] = [:], caller: String = ":1.1") async throws(VoiceboxError) -> UInt64 {
        try await service.speak(text, options: SpeakOptions(options), caller: caller)
    }

    func testSpeakQueuesWithTheOptionsAndAnnouncesStartAndEnd() async throws {
        let id = try await speak("hello", ["rate": .double(2), "priority": .string("important"), "language": .string("en-US")])
        let request = try XCTUnwrap(synthesizer.requests.first)
        XCTAssertEqual(request.id, id)
        XCTAssertEqual(request.rate, 2)
        XCTAssertEqual(request.priority, .important)
        XCTAssertEqual(request.voice?.language, "en-US")
        synthesizer.report(.started(id))
        synthesizer.report(.finished(id, .done))
        let bus = bus!
        try await waitUntil("the service to handle what the synthesizer reported") { bus.signals.contains(.speechFinished(id, .done)) }
        XCTAssertEqual(bus.signals.filter { $0 != .voicesChanged }, [.speechStarted(id), .speechFinished(id, .done)])
        XCTAssertEqual(bus.properties.filter { if case .speaking = $0 { true } else { false } },
                       [.speaking(false), .speaking(true), .speaking(false)])
    }

    func testTwoSpeaksFromOneCallerReachTheEngineInOrder() async throws {
        let first = try await speak("one")
        let second = try await speak("two")
        XCTAssertEqual(synthesizer.commands, [.speak(first), .speak(second)])
        XCTAssertLessThan(first, second)
    }

    func testWaitReturnsOnlyOnceTheUtteranceEnded() async throws {
        let service = service!
        let waiting = Task { try await service.speak("wait", options: SpeakOptions(["wait": .bool(true)]), caller: ":1.1") }
        let synthesizer = synthesizer!
        try await waitUntil("the service to handle what the synthesizer reported") { !synthesizer.requests.isEmpty }
        let id = synthesizer.requests[0].id
        try await Task.sleep(for: .milliseconds(50))
        synthesizer.report(.finished(id, .done))
        let returned = try await waiting.value
        XCTAssertEqual(returned, id)
    }

    func testStopSpeakingZeroStopsTheCallersOwnAndAnIdStopsAnyones() async throws {
        let mine = try await speak(caller: ":1.1")
        let theirs = try await speak(caller: ":1.2")
        await service.stopSpeaking(0, caller: ":1.1")
        XCTAssertEqual(synthesizer.commands.last, .stop([mine]))
        await service.stopSpeaking(theirs, caller: ":1.1")
        XCTAssertEqual(synthesizer.commands.last, .stop([theirs]))
        let bus = bus!
        try await waitUntil("the service to handle what the synthesizer reported") { bus.signals.contains(.speechFinished(theirs, .cancelled)) }
        let before = synthesizer.commands.count
        await service.stopSpeaking(theirs, caller: ":1.1")  // already over: nothing to do
        await service.stopSpeaking(999, caller: ":1.1")
        XCTAssertEqual(synthesizer.commands.count, before)
    }

    func testStopAllSpeakingStopsEveryCaller() async throws {
        let a = try await speak(caller: ":1.1")
        let b = try await speak(caller: ":1.2")
        await service.stopAllSpeaking()
        XCTAssertEqual(synthesizer.commands.last, .stop([a, b]))
        let bus = bus!
        try await waitUntil("the service to handle what the synthesizer reported") { bus.signals.contains(.speechFinished(b, .cancelled)) }
    }

    /// Speech is held while anyone holds a pause; the synthesizer hears one pause and one resume.
    func testPauseBelongsToWhoeverPausedItAndLeavingReleasesIt() async throws {
        await service.pauseSpeaking(caller: ":1.1")
        await service.pauseSpeaking(caller: ":1.2")
        await service.pauseSpeaking(caller: ":1.2")
        await service.resumeSpeaking(caller: ":1.3")  // holds none: nothing changes
        await service.resumeSpeaking(caller: ":1.1")
        var paused = await service.isPaused
        XCTAssertTrue(paused)
        XCTAssertEqual(synthesizer.commands, [.pause])
        XCTAssertEqual(bus.watchedCallers, [":1.2"], "only holders are watched")

        bus.vanish(":1.2")
        let synthesizer = synthesizer!
        try await waitUntil("the service to handle what the synthesizer reported") { synthesizer.commands.count == 2 }
        XCTAssertEqual(synthesizer.commands, [.pause, .resume])
        paused = await service.isPaused
        XCTAssertFalse(paused)
        XCTAssertEqual(bus.properties.filter { if case .paused = $0 { true } else { false } },
                       [.paused(false), .paused(true), .paused(false)])
        XCTAssertEqual(bus.watchedCallers, [])
    }

    func testACallerThatLeavesCancelsOnlyWhatItWaitsFor() async throws {
        let service = service!
        let fireAndForget = try await speak(caller: ":1.5")
        let waiting = Task { try await service.speak("wait", options: SpeakOptions(["wait": .bool(true)]), caller: ":1.5") }
        let synthesizer = synthesizer!
        try await waitUntil("the service to handle what the synthesizer reported") { synthesizer.requests.count == 2 }
        let owed = synthesizer.requests[1].id
        XCTAssertEqual(bus.watchedCallers, [":1.5"])
        bus.vanish(":1.5")
        _ = try await waiting.value
        XCTAssertEqual(synthesizer.commands.last, .stop([owed]))
        XCTAssertFalse(synthesizer.commands.contains(.stop([fireAndForget])))
    }

    func testEngineErrorsBecomeTheirNamedErrors() async throws {
        synthesizer.refuseNext(.unavailable("speech-dispatcher did not answer within 2 s"))
        do {
            _ = try await speak()
            XCTFail("spoke")
        } catch {
            XCTAssertEqual(error.kind, .engineUnavailable)
            XCTAssertTrue(error.message.contains("2 s"))
        }
        synthesizer.refuseNext(.rejected("no"))
        do {
            _ = try await speak()
            XCTFail("spoke")
        } catch {
            XCTAssertEqual(error.kind, .failed)
        }
        // The engine's events reach the service on its own task: each call comes once it has
        // handled the event, and is held to its outcome.
        let service = service!
        synthesizer.report(.unavailable(reason: "gone"))
        try await waitUntil("the service to know the engine is away", timeout: .seconds(30)) { await service.engineProblem != nil }
        do {
            _ = try await speak()
            XCTFail("Speak while the engine is away must fail at once")
        } catch {
            XCTAssertEqual(error.kind, .engineUnavailable)
        }
        synthesizer.report(.available)
        try await waitUntil("the service to know the engine is back", timeout: .seconds(30)) { await service.engineProblem == nil }
        let again = try await speak()
        XCTAssertGreaterThan(again, 0, "Speak works again once the engine is back")
    }

    func testBadTextIsRefusedBeforeTheEngine() async throws {
        for text in ["", "   ", String(repeating: "a", count: Speech1.maximumTextBytes + 1)] {
            do {
                _ = try await speak(text)
                XCTFail("spoke \(text.prefix(10))")
            } catch {
                XCTAssertTrue([VoiceboxError.Kind.invalidArgument, .tooLarge].contains(error.kind))
            }
        }
        XCTAssertEqual(synthesizer.commands, [])
    }
}
