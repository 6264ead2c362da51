import Foundation
@testable import TestSupport
import VoiceboxCore
import XCTest
@testable import VoiceboxSpeechd

/// Against a real speech-dispatcher (`SPEECHD_ADDRESS`); every wait is bounded. Tests assert what
/// happens and in which order; where a bound must pass, it is made small (or, to show that nothing
/// waits for it, huge) through the configuration's `bounds`.
// @SoundServer: speech-dispatcher plays into the sound server; its events follow the playback
final class SpeechDispatcherSynthesizerTests: XCTestCase {
    private var synthesizers: [SpeechDispatcherSynthesizer] = []
    private var servers: [PrivateSpeechd] = []

    override func tearDown() {
        for synthesizer in synthesizers { synthesizer.shutdown() }
        synthesizers.removeAll()
        servers.removeAll() // kills them
        super.tearDown()
    }

    /// Connection attempts 0.05 s apart, doubling to 0.2 s (not 0.25 s to 10 s): a server that comes
    /// (back) is found at once, and a synthesizer without one tries many times while a test runs.
    static let quickReconnect = Bounds([.speechdReconnectFirst: .milliseconds(50), .speechdReconnectLimit: .milliseconds(200)])

    private func make(_ address: String, bounds: Bounds = Bounds(),
                      recovery: SpeechDispatcherSynthesizer.Recovery = .restart) -> (SpeechDispatcherSynthesizer, EventRecorder) {
        let synthesizer = SpeechDispatcherSynthesizer(
            configuration: .init(address: address, autospawn: false, clientName: "voicebox-tests", bounds: bounds, recovery: recovery))
        synthesizers.append(synthesizer)
        return (synthesizer, EventRecorder(synthesizer))
    }

    private func connected(_ address: String, bounds: Bounds = Bounds(),
                           recovery: SpeechDispatcherSynthesizer.Recovery = .restart) async throws -> (SpeechDispatcherSynthesizer, EventRecorder) {
        let (synthesizer, recorder) = make(address, bounds: bounds, recovery: recovery)
        guard await recorder.wait(for: .available, timeout: 20) else {
            XCTFail("no .available from \(address): \(recorder.events)")
            throw SynthesizerError.unavailable("not connected")
        }
        return (synthesizer, recorder)
    }

    private func privateServer() throws -> PrivateSpeechd {
        let server = try PrivateSpeechd(config: try TestStack.configDirectory())
        servers.append(server)
        return server
    }

    /// listVoices, bounded: fails the test instead of hanging.
    private func listVoices(_ synthesizer: SpeechDispatcherSynthesizer, timeout: Double = 30) async throws -> [Voice] {
        try await bounded(timeout, "listVoices") { try await synthesizer.listVoices() }
    }

    private static func isUnavailable(_ event: SynthesisEvent) -> Bool {
        if case .unavailable = event { true } else { false }
    }

    private static func isFailure(_ event: SynthesisEvent) -> Bool {
        if case .failed = event { true } else { false }
    }

    // MARK: Voices

    func testListVoicesIsNonEmptyWithEnglishVoicesAndUniqueIds() async throws {
        let (synthesizer, _) = try await connected(try TestStack.address())
        let start = ContinuousClock.now
        let voices = try await listVoices(synthesizer)
        let elapsed = ContinuousClock.now - start
        print("listVoices: \(voices.count) voices from \(Set(voices.map(\.engine)).sorted()) in \(elapsed)")

        XCTAssertFalse(voices.isEmpty)
        XCTAssertEqual(Set(voices.map(\.id)).count, voices.count, "ids must be unique")
        for voice in voices { XCTAssertEqual(voice.id, "\(voice.engine)/\(voice.name)") }
        let english = voices.filter { $0.language.lowercased().hasPrefix("en") }
        XCTAssertFalse(english.isEmpty, "no English voice")
        if voices.contains(where: { $0.engine == "espeak-ng" }) {
            XCTAssertTrue(voices.contains { $0.id == "espeak-ng/English (Great Britain)" && $0.variant == "none"
                    && $0.language.lowercased() == "en-gb" })
        }
        // A second listing gives the same ids (stable).
        let again = try await listVoices(synthesizer)
        XCTAssertEqual(again.map(\.id), voices.map(\.id))
    }

    /// Speech asked for while a listing runs begins before the listing is over: it is not queued
    /// behind it. (speak() to .started: 0.09 s measured, 0.03 s without a listing; the listing takes
    /// about a second, most of it speech-dispatcher building its 483 KB reply. Before the listing
    /// connection got a read buffer, speech-dispatcher was blocked writing the list byte by byte and
    /// speech began only after it.)
    func testListingDoesNotDelaySpeaking() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        let listing = Task { () -> ContinuousClock.Instant in
            _ = try await bounded(30, "listVoices") { try await synthesizer.listVoices() }
            return ContinuousClock.now
        }
        try await Task.sleep(for: .milliseconds(50))  // the listing goes first (shorter only weakens the test)
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "Hello while listing."))
        let value1 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value1)
        let started = try XCTUnwrap(recorder.time(of: .started(1)))
        let value2 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value2, .done)
        let listed = try await listing.value
        XCTAssertLessThan(started, listed, "speech began only once the listing had ended")
    }

    func testListVoicesThrowsUnavailableWithoutServer() async throws {
        _ = try TestStack.address()
        let server = try privateServer() // never started
        let (synthesizer, _) = make(server.address)
        do {
            _ = try await listVoices(synthesizer)
            XCTFail("listed voices of no server")
        } catch SynthesizerError.unavailable {
        }
    }

    // MARK: Speaking

    func testSpeakEmitsStartedThenFinishedDone() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        let spoken = ContinuousClock.now
        try await synthesizer.speak(SynthesisRequest(id: 7, text: "Hello from voice box."))
        let value3 = await recorder.end(of: 7, timeout: 20)
        XCTAssertEqual(value3, .done)
        XCTAssertEqual(recorder.events(for: 7), [.started(7), .finished(7, .done)])
        if let started = recorder.time(of: .started(7)), let finished = recorder.time(of: .finished(7, .done)) {
            print("speak() to .started: \(started - spoken); spoken for \(finished - started)")
        }
    }

    func testSpeakRightAfterInitWaitsForTheFirstConnection() async throws {
        let (synthesizer, recorder) = make(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "Straight away."))
        XCTAssertEqual(recorder.events.first, .available)
        let end = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(end, .done)
    }

    func testEveryParameterAndAVoiceFromTheListAreAccepted() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        let voices = try await listVoices(synthesizer)
        let voice = try XCTUnwrap(voices.first { $0.language.lowercased().hasPrefix("en") && $0.variant != "none" })
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "Quick and high.", voice: voice, rate: 2, pitch: 1.5,
                                                     volume: 0.5))
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Slow and low.", language: "en", rate: 0.5,
                                                     pitch: 0.5))
        try await synthesizer.speak(SynthesisRequest(id: 3, text: "Extremes.", rate: 100, pitch: 0.01, volume: 7))
        for id: UInt64 in 1...3 {
            let value4 = await recorder.end(of: id, timeout: 20)
            XCTAssertEqual(value4, .done, "utterance \(id)")
        }
        XCTAssertEqual(recorder.events.filter { !Self.isUnavailable($0) && $0 != .available },
                       [.started(1), .finished(1, .done), .started(2), .finished(2, .done),
                        .started(3), .finished(3, .done)])
    }

    func testSSMLMarksAreReportedBetweenStartAndEnd() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(
            id: 1, text: #"Hello <mark name="one"/> there <mark name="two"/> world."#, ssml: true))
        let value5 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value5, .done)
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .mark(1, "one"), .mark(1, "two"), .finished(1, .done)])
    }

    func testDuplicateIdIsRejected() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        do {
            try await synthesizer.speak(SynthesisRequest(id: 1, text: "again"))
            XCTFail("accepted a duplicate id")
        } catch SynthesizerError.rejected {
        }
        await synthesizer.stop([1])
        let value6 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value6, .cancelled)
    }

    // MARK: Stopping

    func testStopOfSpokenUtteranceGivesCancelled() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        let value7 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value7)
        await synthesizer.stop([1])
        let value8 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value8, .cancelled)
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .finished(1, .cancelled)])
        // The connection still speaks afterwards.
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Next."))
        let value9 = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(value9, .done)
    }

    func testStopOfQueuedUtteranceKeepsTheCurrentOne() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "One, two, three, four, five, six, seven."))
        try await synthesizer.speak(SynthesisRequest(id: 2, text: SynthesisRequest.longText))
        try await synthesizer.speak(SynthesisRequest(id: 3, text: "Three."))
        let value10 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value10)
        await synthesizer.stop([2])
        let value11 = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(value11, .cancelled)
        let value12 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value12, .done)
        let value13 = await recorder.end(of: 3, timeout: 20)
        XCTAssertEqual(value13, .done)
        XCTAssertEqual(recorder.events(for: 2), [.finished(2, .cancelled)], "a stopped queued utterance never starts")
        XCTAssertEqual(recorder.events(for: 3), [.started(3), .finished(3, .done)])
    }

    func testStopOfEverythingCancelsAll() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        for id: UInt64 in 1...3 {
            try await synthesizer.speak(SynthesisRequest(id: id, text: SynthesisRequest.longText))
        }
        let value14 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value14)
        await synthesizer.stop([3, 1, 2])
        for id: UInt64 in 1...3 {
            let value15 = await recorder.end(of: id, timeout: 20)
            XCTAssertEqual(value15, .cancelled)
        }
        try await synthesizer.speak(SynthesisRequest(id: 4, text: "Still here."))
        let value16 = await recorder.end(of: 4, timeout: 20)
        XCTAssertEqual(value16, .done)
        // speech-dispatcher speaks in order: had 2 or 3 been left in it, they would have begun before 4.
        XCTAssertEqual(recorder.events.filter { if case .started = $0 { true } else { false } }, [.started(1), .started(4)])
    }

    // MARK: Priorities

    /// Measured with speech-dispatcher 0.11.4: an important message cancels our message being spoken
    /// (reported as CANCEL: `.interrupted`), speaks, and a message still queued behind waits and is
    /// spoken afterwards.
    func testImportantInterruptsTheSpokenMessageAndPostponesQueuedOnes() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Queued message."))
        let value17 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value17)
        try await synthesizer.speak(SynthesisRequest(id: 3, text: "Important.", priority: .important))

        let value18 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value18, .interrupted)
        let value19 = await recorder.end(of: 3, timeout: 20)
        XCTAssertEqual(value19, .done)
        let value20 = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(value20, .done)
        let events = recorder.events.filter { $0 != .available }
        XCTAssertEqual(events, [.started(1), .finished(1, .interrupted), .started(3), .finished(3, .done),
                                .started(2), .finished(2, .done)])
    }

    /// Measured: a text-priority message is cancelled by the next text or message; a notification
    /// that arrives while something is spoken is dropped at once (CANCEL before it ever begins).
    func testTextIsReplacedAndNotificationIsDroppedWhileSpeaking() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText, priority: .text))
        let value21 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value21)
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Notification.", priority: .notification))
        let value22 = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(value22, .interrupted)
        try await synthesizer.speak(SynthesisRequest(id: 3, text: "Newer text.", priority: .text))
        let value23 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value23, .interrupted)
        let value24 = await recorder.end(of: 3, timeout: 20)
        XCTAssertEqual(value24, .done)
        XCTAssertEqual(recorder.events(for: 2), [.finished(2, .interrupted)])
    }

    // MARK: Pause

    func testPauseHoldsAndResumeSpeaksAgain() async throws {
        let address = try TestStack.address()
        let (synthesizer, recorder) = try await connected(address)
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "Pause me. I will go on after the pause."))
        let value25 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value25)
        try await synthesizer.pause()
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Said after the resume."))
        // Meanwhile another program's message is spoken to its end. speech-dispatcher speaks messages
        // in the order they came: had ours been left in it, 1 would have ended, and 2 begun, first.
        let other = try RawSSIPClient(address: address, name: "meanwhile")
        try other.command("SET self PRIORITY message")
        let otherID = try XCTUnwrap(try other.speakRaw(RawSSIPClient.escaped("Meanwhile.")))
        XCTAssertTrue(other.waitForEvent(702, message: otherID, timeout: 20), "the other program was not heard")
        XCTAssertEqual(recorder.events(for: 1), [.started(1)], "nothing ends while paused")
        XCTAssertEqual(recorder.events(for: 2), [], "nothing starts while paused")

        try await synthesizer.resume()
        let value26 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value26, .done)
        let value27 = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(value27, .done)
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .finished(1, .done)])
        XCTAssertEqual(recorder.events(for: 2), [.started(2), .finished(2, .done)])

        // Stopping a paused utterance, and speech-dispatcher still speaks afterwards.
        try await synthesizer.pause()
        try await synthesizer.speak(SynthesisRequest(id: 3, text: "Never said."))
        await synthesizer.stop([3])
        let value28 = await recorder.end(of: 3, timeout: 20)
        XCTAssertEqual(value28, .cancelled)
        try await synthesizer.resume()
        try await synthesizer.speak(SynthesisRequest(id: 4, text: "Not wedged."))
        let value29 = await recorder.end(of: 4, timeout: 20)
        XCTAssertEqual(value29, .done)
    }

    // MARK: Connection

    func testServerDeathEndsUtterancesWithErrorAndRestartReconnects() async throws {
        _ = try TestStack.address()
        let server = try privateServer()
        try await server.start()
        let (synthesizer, recorder) = try await connected(server.address, bounds: Self.quickReconnect)
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Queued."))
        let value30 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value30)

        XCTAssertTrue(server.kill(), "could not kill the private speech-dispatcher")
        let lost = await recorder.wait(timeout: 20) { $0.contains(where: Self.isUnavailable) }
        XCTAssertTrue(lost, "no .unavailable: \(recorder.events)")
        guard let unavailable = recorder.events.first(where: Self.isUnavailable) else { return }
        // The one being spoken ends with the reason; the one queued behind waits for a server to come
        // back, and with none (no autospawn) ends too.
        XCTAssertEqual(recorder.events.filter { $0 != .available && !Self.isFailure($0) },
                       [.started(1), .finished(1, .error), .finished(2, .error), unavailable])
        XCTAssertEqual(recorder.events.filter(Self.isFailure).count, 2, "\(recorder.events)")

        do {
            try await synthesizer.speak(SynthesisRequest(id: 3, text: "Nobody listens."))
            XCTFail("speak succeeded without a server")
        } catch SynthesizerError.unavailable {
        }

        try await server.start()
        let value32 = await recorder.wait(timeout: 20) { $0.filter { $0 == .available }.count == 2 }
        XCTAssertTrue(value32)
        try await synthesizer.speak(SynthesisRequest(id: 4, text: "Back again."))
        let value33 = await recorder.end(of: 4, timeout: 20)
        XCTAssertEqual(value33, .done)
        XCTAssertEqual(recorder.events(for: 4), [.started(4), .finished(4, .done)])
        XCTAssertEqual(recorder.events(for: 3), [], "a refused utterance has no events")
    }

    /// An address given explicitly, with a socket path that is not the default one.
    func testExplicitAddressWithANonDefaultSocketPath() async throws {
        _ = try TestStack.address()
        let server = try privateServer()
        try await server.start()
        XCTAssertNotEqual(server.socket, SpeechdAddress.defaultSocketPath())
        let (synthesizer, recorder) = try await connected("unix_socket:\(server.socket)")
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "On my own socket."))
        let end = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(end, .done)
        let voices = try await listVoices(synthesizer)
        XCTAssertFalse(voices.isEmpty)
    }

    /// Without a server the synthesizer tries again and again (every 0.2 s here), says so once, and
    /// starts none itself (autospawn false); the server started later is found.
    func testSynthesizerCreatedBeforeItsServerConnectsOnceItStarts() async throws {
        _ = try TestStack.address()
        let server = try privateServer()
        let (synthesizer, recorder) = make(server.address, bounds: Self.quickReconnect)
        let value34 = await recorder.wait(timeout: 20) { $0.contains(where: Self.isUnavailable) }
        XCTAssertTrue(value34)
        do {
            try await synthesizer.speak(SynthesisRequest(id: 1, text: "Too early."))
            XCTFail("speak succeeded without a server")
        } catch SynthesizerError.unavailable {
        }
        // A first attempt that autospawned would have connected (.available), not failed.
        XCTAssertFalse(PrivateSpeechd.accepts(server.socket), "autospawn false must not start a server")

        try await server.start()  // a second or more, in which the synthesizer tries several times
        XCTAssertFalse(recorder.events.contains(.available), "connected to a server before it started")
        let value35 = await recorder.wait(for: .available, timeout: 20)
        XCTAssertTrue(value35)
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Now it works."))
        let value36 = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(value36, .done)
        XCTAssertEqual(recorder.count(.available), 1)
        XCTAssertEqual(recorder.events.filter(Self.isUnavailable).count, 1, "one .unavailable, not one per retry")
    }

    /// No thread per connection: ten live synthesizers add no threads beyond Dispatch's pool, and an
    /// idle connection uses no CPU.
    func testIdleConnectionsUseNoCPUAndNoThreadsOfTheirOwn() async throws {
        let address = try TestStack.address()
        for _ in 0..<5 {
            let (synthesizer, _) = try await connected(address)
            synthesizer.shutdown()
        }
        let baseline = Self.threads(named: "").count
        var live: [SpeechDispatcherSynthesizer] = []
        for _ in 0..<10 { live.append(try await connected(address).0) }
        try await Task.sleep(for: .milliseconds(300))
        let withTen = Self.threads(named: "").count
        print("threads: \(baseline) before, \(withTen) with ten live connections")
        XCTAssertLessThan(withTen - baseline, 5, "threads grow with connections: \(Self.threads(named: ""))")
        let before = Self.processCPUTicks()
        try await Task.sleep(for: .seconds(1))  // the window CPU is counted over
        let used = Self.processCPUTicks() - before
        print("CPU used by the whole test process over 1 s idle with ten connections: \(used) ticks")
        XCTAssertLessThan(used, 10, "something spins while idle") // a busy thread would use ~100
        for synthesizer in live { synthesizer.shutdown() }
    }

    /// A frozen server (SIGSTOP) answers nothing. stop() and speak() never wait for it: here its
    /// answers are given a minute (`speechd-reply`, and the watchdog and heartbeat as long), so a call
    /// that waited for one would still be waiting when the test gives up (20 s). Both return while it
    /// is frozen and nothing has been given up; the stopped utterance ends `.cancelled` at once, and the
    /// one spoken into the freeze waits in the synthesizer and is spoken once the server continues.
    func testStopAndSpeakNeverWaitForAFrozenServer() async throws {
        _ = try TestStack.address()
        let server = try privateServer()
        try await server.start()
        let patient = Bounds([.speechdReply: .seconds(60), .speechdBegin: .seconds(60), .speechdHeartbeat: .seconds(60)])
        let (synthesizer, recorder) = try await connected(server.address, bounds: patient, recovery: .reconnect)
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        let began = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(began)
        let pid = try XCTUnwrap(server.pid)
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        defer { kill(pid, SIGCONT) }

        try await bounded(20, "stop() with a frozen server") { await synthesizer.stop([1]) }
        let stopped = await recorder.end(of: 1, timeout: 20)  // yielded before stop() returned; read by another task
        XCTAssertEqual(stopped, .cancelled)
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .finished(1, .cancelled)])
        try await bounded(20, "speak() into a frozen server") {
            try await synthesizer.speak(SynthesisRequest(id: 2, text: "Into the freeze, and spoken after it."))
        }
        XCTAssertTrue(SpeechdServerProcess.isStopped(pid), "the server is still frozen")
        XCTAssertEqual(recorder.events(for: 2), [])
        XCTAssertFalse(recorder.events.contains(where: Self.isUnavailable), "\(recorder.events)")

        XCTAssertEqual(kill(pid, SIGCONT), 0)
        let end = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(end, .done, "\(recorder.events)")
        XCTAssertEqual(recorder.events(for: 2), [.started(2), .finished(2, .done)])
    }

    /// A wedged server (SIGSTOP) that recovery may not restart (`reconnect`): commands unanswered
    /// within `speechd-reply` (0.3 s here) drop the connection. The utterance being spoken ends with
    /// error naming the command; the one spoken into the freeze is answered (queued), and ends with
    /// error once a fresh connection goes unanswered too; then speak() fails at once. After SIGCONT
    /// the synthesizer comes back by itself, the server untouched.
    func testAServerThatStopsAnsweringEndsItsUtterancesWithErrorAndComesBack() async throws {
        _ = try TestStack.address()
        let server = try privateServer()
        try await server.start()
        var bounds = Self.quickReconnect
        bounds[.speechdReply] = .milliseconds(300)
        let (synthesizer, recorder) = try await connected(server.address, bounds: bounds, recovery: .reconnect)
        // Short: the server, continued, speaks the rest of it before anything else (nobody stopped
        // it there: our connection was gone).
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "One, two, three, four, five, six, seven."))
        let began = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(began)
        let pid = try XCTUnwrap(server.pid)
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        defer { kill(pid, SIGCONT) }

        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Into the void."))
        let ended = await recorder.end(of: 2, timeout: 20)
        XCTAssertEqual(ended, .error)
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .failed(1, reason: "speech-dispatcher did not answer SET self OUTPUT_MODULE within 0.3 s"),
                                                 .finished(1, .error)])
        XCTAssertEqual(recorder.events(for: 2), [.failed(2, reason: "speech-dispatcher did not answer SET self OUTPUT_MODULE within 0.3 s; "
                                                                  + "then speech-dispatcher did not answer SET self CLIENT_NAME within 0.3 s"),
                                                 .finished(2, .error)])
        let lost = await recorder.wait(timeout: 20) { $0.contains(where: Self.isUnavailable) }
        XCTAssertTrue(lost, "\(recorder.events)")
        XCTAssertLessThan(try XCTUnwrap(recorder.position(of: .finished(1, .error))), try XCTUnwrap(recorder.position(of: .finished(2, .error))))
        XCTAssertEqual(server.pid, pid, "reconnect must not restart the server")
        do {
            try await synthesizer.speak(SynthesisRequest(id: 3, text: "Still wedged."))
            XCTFail("speak succeeded with a stopped server")
        } catch SynthesizerError.unavailable {
        }

        XCTAssertEqual(kill(pid, SIGCONT), 0)
        let back = await recorder.wait(timeout: 20) { $0.filter { $0 == .available }.count == 2 }
        XCTAssertTrue(back, "\(recorder.events)")
        try await synthesizer.speak(SynthesisRequest(id: 4, text: "Awake again."))
        let end = await recorder.end(of: 4, timeout: 20)
        XCTAssertEqual(end, .done)
        XCTAssertEqual(recorder.events(for: 4), [.started(4), .finished(4, .done)])
    }

    private static func threads(named prefix: String) -> [String] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return tasks.compactMap { task in
            (try? Data(contentsOf: URL(fileURLWithPath: "/proc/self/task/\(task)/comm")))
                .map { String(decoding: $0, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) }
        }.filter { $0.hasPrefix(prefix) }
    }

    /// utime + stime of this process, in clock ticks (1/100 s).
    private static func processCPUTicks() -> Int {
        let stat = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/self/stat")))
            .map { String(decoding: $0, as: UTF8.self) } ?? ""
        let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
        guard fields.count > 12 else { return 0 }
        return (Int(fields[11]) ?? 0) + (Int(fields[12]) ?? 0)
    }

    func testShutdownCancelsUtterancesAndFinishesTheStream() async throws {
        let (synthesizer, recorder) = try await connected(try TestStack.address())
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        let value37 = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(value37)
        synthesizer.shutdown()
        let value38 = await recorder.end(of: 1, timeout: 20)
        XCTAssertEqual(value38, .cancelled)
        do {
            try await synthesizer.speak(SynthesisRequest(id: 2, text: "After."))
            XCTFail("spoke after shutdown")
        } catch SynthesizerError.unavailable {
        }
        synthesizer.shutdown() // idempotent
    }
}

/// Runs `operation`, failing the test (and throwing) if it has not returned after `timeout` seconds.
func bounded<T: Sendable>(_ timeout: Double, _ what: String,
                          _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: .seconds(timeout))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            XCTFail("\(what) did not return within \(timeout) s")
            throw SynthesizerError.unavailable("timeout")
        }
        return value
    }
}
