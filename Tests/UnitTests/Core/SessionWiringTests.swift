@testable import TestSupport
import VoiceboxContract
import XCTest
@testable import VoiceboxCore

/// The speech and recognition services with an audio session: speaking and listening interrupt
/// others for as long as they last, and a call holds speech and corks the microphone.
final class SessionWiringTests: XCTestCase {
    var journal: MemoryJournal!
    var mixer: ScriptedMixer!
    var bus: RecordingBus!
    var session: AudioSession!
    var tasks: [Task<Void, Never>] = []

    override func setUp() async throws {
        journal = MemoryJournal()
        mixer = ScriptedMixer(journal: journal)
        bus = RecordingBus()
        var settings = AudioSessionSettings()
        settings.grace = .milliseconds(20)
        settings.listeningInterruptionLimit = .milliseconds(300)
        session = AudioSession(mixer: mixer, players: ScriptedPlayers(), journal: journal, bus: bus, settings: settings,
                               ownProcessID: 1)
        let session = session!
        tasks.append(Task { await session.run() })
        mixer.play(PlaybackStream(id: 2, applicationName: "Firefox", processID: 200))
        // The session knows stream 2 once it has taken the event and handled what it took.
        let scripted = mixer!
        try await waitUntil("the session to take stream 2", timeout: .seconds(30)) { scripted.allTaken }
        await session.drain()
    }

    override func tearDown() async throws {
        for task in tasks { task.cancel() }
    }

    private func eventually(_ what: String, _ condition: @escaping @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)  // a give-up, not a speed
        while !condition() {
            guard ContinuousClock.now < deadline else { return XCTFail("\(what): not within 30 s") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    func testAnUtteranceInterruptsOthersUntilItEndsAndACallHoldsIt() async throws {
        let synthesizer = ScriptedSynthesizer()
        let speech = SpeechService(synthesizer: synthesizer, bus: bus, session: session)
        await session.add(speech)
        tasks.append(Task { await speech.run() })
        let id = try await speech.speak("hello", options: SpeakOptions(["others": .string("pause")]), caller: ":1.1")
        let mixer = mixer!
        XCTAssertEqual(mixer.changes, ["mute 2 true"], "muted before the engine was asked to speak")
        XCTAssertEqual(synthesizer.commands, [.speak(id)])
        synthesizer.report(.finished(id, .done))
        try await eventually("others restored") { mixer.changes == ["mute 2 true", "mute 2 false"] }

        let long = try await speech.speak("a long one", options: SpeakOptions(["others": .string("mix")]), caller: ":1.1")
        synthesizer.report(.started(long))
        let bus = bus!
        try await eventually("Speaking") { bus.properties.last(where: \.isSpeaking) == .speaking(true) }
        mixer.play(PlaybackStream(id: 9, applicationName: "Zoom", processID: 900, role: "phone"))
        try await eventually("speech held by the call") { synthesizer.commands.last == .pause }
        XCTAssertEqual(bus.properties.last(where: \.isSpeaking), .speaking(false), "nothing is spoken while the call holds it")
        XCTAssertEqual(bus.properties.last(where: \.isInterrupted), .interrupted(true))
        mixer.remove(9)
        try await eventually("speech going on after the call") { synthesizer.commands.last == .resume }
        XCTAssertEqual(bus.properties.last(where: \.isSpeaking), .speaking(true))
        let paused = await speech.isPaused
        XCTAssertFalse(paused, "a call is no caller's pause")
    }

    /// A microphone recognition with the session, started: its answer to come, and its microphone.
    private func listening(_ engine: FakeEngine) async throws -> (PendingRecognition, FakeStream) {
        let capture = FakeCapture()
        let recognition = RecognitionService(engine: engine, capture: capture, files: FakeFiles(files: [:]),
                                             streams: FakeStreams(streams: [:]), bus: bus,
                                             session: session, maxFileRecognitions: 1)
        await session.add(recognition)
        let pending = try await recognition.start(RecognizeOptions([:]), caller: ":1.1")
        try await eventually("the microphone to open") { !capture.streams.isEmpty }
        return (pending, capture.streams[0])
    }

    func testListeningInterruptsOthersAndACallCorksTheMicrophoneThenEndsItPastTheLimit() async throws {
        let (pending, microphone) = try await listening(FakeEngine())
        let mixer = mixer!
        XCTAssertEqual(mixer.changes, ["mute 2 true"], "listening pauses others by default")
        microphone.send(speech: true, count: 3)
        mixer.play(PlaybackStream(id: 9, applicationName: "Zoom", processID: 900, role: "phone"))
        try await eventually("the microphone corked") { microphone.corkings == [true] }
        let done = try await pending.outcome()
        XCTAssertEqual(done.end, .interrupted)
        XCTAssertFalse(done.result.text.isEmpty, "what was heard before the call is kept")
        XCTAssertTrue(microphone.isClosed)
        // The recognition is over, the call is not: others stay paused until it is.
        try await Task.sleep(for: .milliseconds(200))
        XCTAssertEqual(mixer.changes, ["mute 2 true"], "nothing is given back while the call goes on")
        mixer.remove(9)
        try await eventually("others restored after the call") { mixer.changes.last == "mute 2 false" }
    }

    /// A call that holds the microphone past the limit while the model still loads: the recording
    /// ends then, and what was said before the call is decoded once the model has loaded.
    func testACallPastTheLimitWhileTheModelLoadsKeepsWhatWasSaidBeforeIt() async throws {
        let loading = LoadGate()
        let (pending, microphone) = try await listening(FakeEngine(loading: loading))
        let bus = bus!
        try await eventually("RecognitionStarted") { bus.signals.contains(.recognitionStarted(pending.id)) }
        microphone.send(speech: true, count: 3)
        mixer.play(PlaybackStream(id: 9, applicationName: "Zoom", processID: 900, role: "phone"))
        try await eventually("the recording ended past the call's limit") { microphone.isClosed }
        loading.open()
        let done = try await pending.outcome()
        XCTAssertEqual(done.end, .interrupted)
        XCTAssertEqual(done.result.text, "w1 w2 w3", "what was said before the call is kept")
        mixer.remove(9)
    }
}

private extension RecordedProperty {
    var isSpeaking: Bool { if case .speaking = self { true } else { false } }
    var isInterrupted: Bool { if case .interrupted = self { true } else { false } }
}
