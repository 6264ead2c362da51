import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxInterface
import XCTest
@testable import VoiceboxSpeechd

/// Nothing a caller sends can wedge speech for the desktop (issue 15), and a speech-dispatcher
/// wedged past that prevention comes back by itself: against the real stack, with the sink's
/// monitor as our ears and other programs as other callers.
// @SoundServer: every test listens for speech on the sink
final class SpeechSafetyTests: XCTestCase {
    /// The documented bound: speech-dispatcher makes no progress for 3 s, then its output module
    /// has 2 s to answer. (Stretched under a sanitizer, which slows voiceboxd.)
    static let noticed = faultBound(5)

    private static func speak(_ connection: BusConnection, _ text: String, _ options: [String: DBusValue] = [:]) async throws -> UInt64 {
        try await Speech1.proxy(connection).call(Speech1.speak, text, VarDict(options))
    }

    private static func errorOf(_ body: () async throws -> Void) async -> DBusError? {
        do {
            try await body()
            return nil
        } catch let error as DBusError {
            return error
        } catch {
            return DBusError(name: "\(error)", message: "")
        }
    }

    /// How long after `asked` (the test's clock) speech was heard on the sink, counting only what was
    /// recorded after `position` (seconds into the recording); nil if nothing within `timeout`. It is
    /// when the test hears it, so the recording's own latency counts against us.
    private func heard(_ ears: MonitorRecorder, after position: Double, since asked: ContinuousClock.Instant,
                       timeout: Duration) async -> Double? {
        do {
            try await waitUntil("speech on the sink", timeout: timeout) { ears.firstLoud(after: position) != nil }
        } catch {
            return nil
        }
        return seconds(ContinuousClock.now - asked)
    }

    /// Seconds from `asked` until utterance `id`'s SpeechStarted arrived (within the bound plus 5 s).
    private func startedAfter(_ id: UInt64, since asked: ContinuousClock.Instant, _ service: ServiceHarness) async throws -> Double {
        try await waitUntil("SpeechStarted(\(id))", timeout: .seconds(Self.noticed + 5)) {
            service.events(of: id).contains("SpeechStarted")
        }
        return seconds(ContinuousClock.now - asked)
    }

    /// Waits until the sink has been silent for half a second (what was playing has drained).
    private func waitForSilence(_ ears: MonitorRecorder) async throws {
        try await waitUntil("the sink to fall silent", timeout: .seconds(10)) {
            ears.seconds > 0.5 && ears.rms(from: ears.seconds - 0.5) < 50
        }
    }

    // MARK: Prevention

    /// The reproduction of the issue: refused at once, and speech goes on for everyone.
    func testTheFreezingMarkIsRefusedAtOnceAndSpeechGoesOnForEveryone() async throws {
        let (stack, service) = try await startService()
        let cases: [(String, String)] = [
            ("<speak><mark name=\"a\n.\nb\"/>x</speak>", "mark name contains a line break"),
            ("<speak><mark name=\"a\nb\"/>x</speak>", "mark name contains a line break"),
            ("<speak><mark name=\"" + String(repeating: "m", count: 1300) + "\"/>x</speak>", "longer than 64 bytes"),
            ("<speak>" + String(repeating: "<s>", count: 9000) + "x" + String(repeating: "</s>", count: 9000) + "</speak>",
             "nests deeper than 32"),
            ("<speak>a<break time=\"3600s\"/>b</speak>", "longer than 10 s"),
            ("<speak>&x;</speak>", "only XML's five"),
            // espeak-ng reads tags in any case, and finds attributes inside other values (red team).
            ("<speak><MARK name=\"a\n.\nb\"/>x</speak>", "mark name contains a line break"),
            ("<speak><Mark name=\"a\n.\nb\"/>x</speak>", "mark name contains a line break"),
            ("<speak><mark name=\"a\" NAME=\"a\n.\nb\"/>x</speak>", "repeats the attribute"),
            ("<speak><mark title=\" name='a\n.\nb'\" name=\"ok\"/>x</speak>", "reads as another attribute"),
            ("<speak>a<BREAK TIME=\"3600s\"/>b</speak>", "longer than 10 s"),
            ("<speak>one <mark name='cd'\n\n/> three</speak>", "mark name in single quotes"),
            ("<speak><audio src=\"/proc/self/fd/4\"/>x</speak>", "may not hold <audio>"),
        ]
        for (ssml, reason) in cases {
            let began = ContinuousClock.now
            let error = await Self.errorOf { _ = try await service.speak(ssml, ["ssml": .boolean(true)]) }
            XCTAssertEqual(error?.name, "org.voicebox.Error.InvalidArgument", "\(ssml.prefix(60))")
            XCTAssertTrue(error?.message.contains(reason) == true, "'\(error?.message ?? "")' lacks '\(reason)'")
            XCTAssertLessThan(ContinuousClock.now - began, .milliseconds(500), "refused late")
        }
        XCTAssertTrue(service.signals.filter { $0.member == "SpeechMark" || $0.member == "SpeechStarted" }.isEmpty,
                      "a refused text gave signals: \(service.signals.map(\.member))")

        // speech-dispatcher still speaks, for us and for a program of its own.
        let ears = try MonitorRecorder(device: stack.sink + ".monitor")
        try await ears.waitUntilRecording()
        let other = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await other.close() }
        let (position, asked) = (ears.seconds, ContinuousClock.now)
        let id = try await Self.speak(other, "Still speaking for everyone.")
        let loud = await heard(ears, after: position, since: asked, timeout: .seconds(3))
        XCTAssertNotNil(loud, "nothing heard after the refused texts")
        if let loud { XCTAssertLessThan(loud, 1.0, "heard \(loud) s after Speak") }
        _ = try await service.waitForFinish(id)
        let direct = try await runQuietly("/usr/bin/spd-say", ["-w", "direct"], seconds: 10)
        XCTAssertEqual(direct, 0, "spd-say -w did not finish: speech-dispatcher is frozen for other clients")
        // A valid mark still comes back as exactly what was sent.
        let marked = try await service.speak("<speak>one <mark name=\"m_1\"/> two</speak>", ["ssml": .boolean(true), "wait": .boolean(true)])
        XCTAssertEqual(service.events(of: marked), ["SpeechStarted", "SpeechMark:m_1", "SpeechFinished:done"])
    }

    /// The seeded corpus of hostile texts (line ends, dot lines, the end marker, control
    /// characters, long lines, XML) through voiceboxd into the real speech-dispatcher: afterwards
    /// another caller's Speak is heard within 1 s.
    func testTheHostileTextCorpusLeavesSpeechWorkingForOthers() async throws {
        let (stack, service) = try await startService()
        let count = Int(ProcessInfo.processInfo.environment["VOICEBOX_CORPUS_SIZE"] ?? "") ?? 600
        var corpus = SpeechCorpus(seed: 0x5EED_15)
        var sent = 0, refused = 0
        for index in 0..<count {
            // D-Bus strings cannot hold NUL: that piece is a space here (the encoder's own test sends it).
            let ssml = index % 4 == 3
            let text = (ssml ? corpus.ssml() : corpus.text()).replacingOccurrences(of: "\u{0}", with: " ")
            // Priority text: each replaces the one before, so the corpus is not read out whole.
            let error = await Self.errorOf { _ = try await service.speak(text, ["ssml": .boolean(ssml), "priority": .string("text")]) }
            if let error {
                XCTAssertEqual(error.name, "org.voicebox.Error.InvalidArgument", "#\(index): \(error.message)")
                refused += 1
            } else {
                sent += 1
            }
        }
        print("METRIC corpus: \(sent) texts spoken (each replacing the last), \(refused) refused")
        try await service.proxy.call(Speech1.stopAllSpeaking)
        try await waitUntil("Speaking to turn false", timeout: .seconds(10)) {
            (try? await service.property("Speaking")) == .boolean(false)
        }

        let ears = try MonitorRecorder(device: stack.sink + ".monitor")
        try await ears.waitUntilRecording()
        let other = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await other.close() }
        let (position, asked) = (ears.seconds, ContinuousClock.now)
        _ = try await Self.speak(other, "Speech still works.")
        let loud = await heard(ears, after: position, since: asked, timeout: .seconds(3))
        XCTAssertNotNil(loud, "another caller's speech was not heard after the corpus")
        if let loud {
            print("METRIC corpus: another caller's speech heard on the sink \(loud) s after its Speak")
            XCTAssertLessThan(loud, 1.0)
        }
    }

    // MARK: Recovery

    /// A speech-dispatcher of this test's own, to be frozen the way any other program could freeze
    /// it, and a voiceboxd on it as on a desktop (autospawn on); at teardown the service stops first,
    /// then the server. The server's socket is not libspeechd's autospawn socket: one that dies (a
    /// wedge may end that way) is started again only with its own command line.
    private func serviceOnItsOwnSpeechd(_ stack: Stack) async throws -> (PrivateSpeechd, ServiceHarness) {
        let speechd = try PrivateSpeechd(config: stack.speechdConfig)
        addTeardownBlock { speechd.stopEverything() }  // registered first: runs after the service stops
        try await speechd.start()
        let service = try await ServiceHarness(stack: stack, speechdAddress: speechd.address, autospawn: true)
        addTeardownBlock { await service.stop() }
        return (speechd, service)
    }

    private func waitUntilSpeaking(_ service: ServiceHarness) async throws {
        try await waitUntil("speaking to work", timeout: .seconds(20)) { (try? await service.speak("ready")) != nil }
    }

    private func freezeWithAMark(_ speechd: PrivateSpeechd) throws {
        let freezer = try RawSSIPClient(address: speechd.address, name: "freezer")
        try freezer.command("SET self SSML_MODE on")
        try freezer.speakRaw(RawSSIPClient.escaped("<speak><mark name=\"a\n.\nb\"/>x</speak>"))
        let checker = try RawSSIPClient(address: speechd.address, name: "checker")
        let id = try XCTUnwrap(try checker.speakRaw(RawSSIPClient.escaped("check")))
        XCTAssertFalse(checker.waitForEvent(701, message: id, timeout: 1.5), "the freeze did not take")
    }

    /// Frozen by another program's index mark: the next Speak from another caller is heard within
    /// the bound plus 2 s; other callers are answered at once meanwhile; speech-dispatcher is back
    /// for every program, not only for us.
    func testAServerFrozenByAnotherProgramRecoversAndTheNextSpeakIsHeard() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack)
        try await waitUntilSpeaking(service)
        let ears = try MonitorRecorder(device: stack.sink + ".monitor")
        try await ears.waitUntilRecording()
        let oldPid = speechd.pid
        try freezeWithAMark(speechd)

        let caller = try BusConnection(address: stack.busAddress)
        let bystander = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await caller.close(); await bystander.close() }
        let (position, asked) = (ears.seconds, ContinuousClock.now)
        let id = try await Self.speak(caller, "Speech is back.")
        var latencies: [Duration] = []
        for _ in 0..<5 {
            for call in [{ try await Speech1.proxy(bystander).call(Speech1.stopSpeaking, 0) },
                         { _ = try await Speech1.proxy(bystander).get(Speech1.speaking) }] as [@Sendable () async throws -> Void] {
                let begin = ContinuousClock.now
                try await call()
                latencies.append(ContinuousClock.now - begin)
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        XCTAssertLessThan(latencies.max() ?? .zero, .milliseconds(faultBound(100)), "others held up: \(latencies)")
        let began = try await startedAfter(id, since: asked, service)
        let took = await heard(ears, after: position, since: asked, timeout: .seconds(Self.noticed + 5))
        print("METRIC speech-dispatcher frozen by another program → next Speak started \(String(format: "%.2f s", began)), heard \(took.map { String(format: "%.2f s", $0) } ?? "never")")
        XCTAssertNotNil(took, "the next Speak was never heard")
        if let took { XCTAssertLessThan(took, Self.noticed + 2, "heard after \(took) s") }
        let end = try await service.waitForFinish(id, timeout: .seconds(20))
        XCTAssertEqual(end, "done")
        XCTAssertNotEqual(speechd.pid, oldPid, "speech-dispatcher was not restarted")
        let direct = try await runQuietly("/usr/bin/spd-say", ["-w", "direct"], output: nil, seconds: 10,
                                          environment: ["SPEECHD_ADDRESS": speechd.address])
        XCTAssertEqual(direct, 0, "speech-dispatcher is still frozen for other programs")
    }

    /// The output module frozen (SIGSTOP) in the middle of an utterance someone waits for: that
    /// caller gets EngineUnavailable saying what happened, the next Speak of another caller is
    /// heard within the bound plus 2 s, and nothing of the stopped server is left running.
    func testAModuleStoppedMidUtteranceRecoversAndTheWaitingCallerIsTold() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack)
        var ready: UInt64 = 0
        try await waitUntil("speaking to work", timeout: .seconds(20)) {
            ready = (try? await service.speak("ready")) ?? 0
            return ready != 0
        }
        _ = try await service.waitForFinish(ready)
        let ears = try MonitorRecorder(device: stack.sink + ".monitor")
        try await ears.waitUntilRecording()

        let waiter = try BusConnection(address: stack.busAddress)
        let caller = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await waiter.close(); await caller.close() }
        let startedBefore = service.signals.filter { $0.member == "SpeechStarted" }.count
        let waiting = Task { () -> DBusError? in
            do {
                _ = try await Speech1.proxy(waiter).call(Speech1.speak, Texts.long, VarDict(["wait": .boolean(true)]))
                return nil
            } catch let error as DBusError {
                return error
            } catch {
                return DBusError(name: "\(error)", message: "")
            }
        }
        try await waitUntil("the long utterance to be heard", timeout: .seconds(10)) {
            service.signals.filter { $0.member == "SpeechStarted" }.count > startedBefore && ears.firstLoud() != nil
        }
        try await Task.sleep(for: .milliseconds(500))
        let server = try XCTUnwrap(SpeechdServerProcess.find(listeningOn: speechd.socket))
        let module = try XCTUnwrap(server.modules.first)
        XCTAssertEqual(kill(module, SIGSTOP), 0)
        addTeardownBlock { kill(module, SIGKILL) }
        // What was already played out drains; then silence: speech has stopped.
        try await waitForSilence(ears)

        let (position, asked) = (ears.seconds, ContinuousClock.now)
        let id = try await Self.speak(caller, "After the freeze.")
        let began = try await startedAfter(id, since: asked, service)
        let took = await heard(ears, after: position, since: asked, timeout: .seconds(Self.noticed + 5))
        print("METRIC output module stopped mid-utterance → next Speak started \(String(format: "%.2f s", began)), heard \(took.map { String(format: "%.2f s", $0) } ?? "never")")
        XCTAssertNotNil(took, "the next Speak was never heard")
        if let took { XCTAssertLessThan(took, Self.noticed + 2, "heard after \(took) s") }
        let error = await waiting.value
        XCTAssertEqual(error?.name, "org.voicebox.Error.EngineUnavailable")
        XCTAssertTrue(error?.message.contains("stopped speaking") == true, error?.message ?? "")
        let end = try await service.waitForFinish(id, timeout: .seconds(20))
        XCTAssertEqual(end, "done")
        XCTAssertFalse(SpeechdServerProcess.alive(module), "the stopped module was left running")
        XCTAssertFalse(SpeechdServerProcess.alive(server.pid), "the wedged server was left running")
    }

    /// A Speak made while speech-dispatcher is stopped, before the wedge is noticed, is answered at
    /// once (not after the 2 s reply timeout, red team), and the utterance is heard after recovery.
    func testSpeakAnswersAtOnceWhileSpeechDispatcherIsStopped() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack)
        try await waitUntilSpeaking(service)
        try await Task.sleep(for: .seconds(2))  // "ready" is over: the server is idle
        speechd.freeze()
        let ears = try MonitorRecorder(device: stack.sink + ".monitor")
        try await ears.waitUntilRecording()
        let (position, asked) = (ears.seconds, ContinuousClock.now)
        let id = try await service.speak("Spoken once speech-dispatcher is back.")
        let took = ContinuousClock.now - asked
        print("METRIC Speak while speech-dispatcher is stopped answered after \(took)")
        XCTAssertLessThan(took, .milliseconds(faultBound(500)))
        let loud = await heard(ears, after: position, since: asked, timeout: .seconds(Self.noticed + 8))
        XCTAssertNotNil(loud, "not heard after recovery")
        let end = try await service.waitForFinish(id, timeout: .seconds(20))
        XCTAssertEqual(end, "done")
    }

    /// StopAllSpeaking during a wedge answers at once; what it stopped stays stopped, and the next
    /// Speak is heard after the recovery.
    func testStopAllSpeakingAnswersAtOnceDuringAWedge() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack)
        try await waitUntilSpeaking(service)
        try freezeWithAMark(speechd)
        let stuck = try await service.speak("This one is stopped while speech-dispatcher is frozen.")
        try await Task.sleep(for: .milliseconds(1500))
        let begin = ContinuousClock.now
        try await service.proxy.call(Speech1.stopAllSpeaking)
        let took = ContinuousClock.now - begin
        print("METRIC StopAllSpeaking while speech-dispatcher is frozen: \(took)")
        XCTAssertLessThan(took, .milliseconds(faultBound(100)))
        let end = try await service.waitForFinish(stuck, timeout: .seconds(2))
        XCTAssertEqual(end, "cancelled")

        let ears = try MonitorRecorder(device: stack.sink + ".monitor")
        try await ears.waitUntilRecording()
        let (position, asked) = (ears.seconds, ContinuousClock.now)
        let next = try await service.speak("Heard after the stop.")
        let loud = await heard(ears, after: position, since: asked, timeout: .seconds(Self.noticed + 5))
        XCTAssertNotNil(loud)
        if let loud { XCTAssertLessThan(loud, Self.noticed + 2) }
        let nextEnd = try await service.waitForFinish(next, timeout: .seconds(20))
        XCTAssertEqual(nextEnd, "done")
        XCTAssertFalse(service.events(of: stuck).contains("SpeechStarted"), "a stopped utterance was spoken")
    }

    /// A speech-dispatcher that dies (killed, as a crash would) on a socket where `--spawn` is
    /// refused ("Mismatch in socket names") is started again with its own command line: the next
    /// Speak is heard, by a new server process, and other programs can speak through it again.
    func testAServerThatDiesIsStartedAgainWithItsOwnCommandLine() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack)
        try await waitUntilSpeaking(service)
        let oldPid = try XCTUnwrap(speechd.pid)
        // The stock way does not work here: this is what the known server's command line is for.
        let spawn = try await runQuietly("/usr/bin/speech-dispatcher",
                                         ["--spawn", "--communication-method", "unix_socket", "--socket-path", speechd.socket],
                                         output: nil, seconds: 20)
        XCTAssertNotEqual(spawn, 0, "--spawn was not refused: the test would not tell the two ways apart")
        let ears = try MonitorRecorder(device: stack.sink + ".monitor")
        try await ears.waitUntilRecording()
        Glibc.kill(oldPid, SIGKILL)
        try await waitUntil("speech-dispatcher to die") { !SpeechdServerProcess.alive(oldPid) }
        let (position, asked) = (ears.seconds, ContinuousClock.now)
        var id: UInt64 = 0
        try await waitUntil("Speak to be accepted", timeout: .seconds(10)) {
            id = (try? await service.speak("Spoken by a new speech-dispatcher.")) ?? 0
            return id != 0
        }
        let loud = await heard(ears, after: position, since: asked, timeout: .seconds(Self.noticed + 5))
        print("METRIC speech-dispatcher killed → next Speak heard: \(loud.map { String(format: "%.2f s", $0) } ?? "never")")
        XCTAssertNotNil(loud, "not heard after the server died")
        if let loud { XCTAssertLessThan(loud, Self.noticed) }
        let end = try await service.waitForFinish(id, timeout: .seconds(20))
        XCTAssertEqual(end, "done")
        let newPid = try XCTUnwrap(speechd.pid)
        XCTAssertNotEqual(newPid, oldPid)
        XCTAssertTrue(SpeechdServerProcess.alive(newPid), "the pid file names no running server")
        let direct = try await runQuietly("/usr/bin/spd-say", ["-w", "direct"], output: nil, seconds: 10,
                                          environment: ["SPEECHD_ADDRESS": speechd.address])
        XCTAssertEqual(direct, 0, "other programs cannot speak through the server started again")
    }
}
