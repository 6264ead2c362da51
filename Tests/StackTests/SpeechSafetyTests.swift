import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import XCTest
@testable import VoiceboxSpeechd

/// Nothing a caller sends can wedge speech for the desktop (issue 15), and a speech-dispatcher
/// wedged past that prevention comes back by itself: against the real stack, with the sink's
/// monitor as our ears and other programs as other callers. The recovery tests run voiceboxd with
/// the watchdog's bound small (`speechd-begin` 0.3 s, not 3 s) and assert what is heard and in which
/// order; how soon with the standard bounds is SpeechdContractTests' (SpeedTests).
final class SpeechSafetyTests: XCTestCase {
    /// Every give-up of the recovery tests: a failure to happen at all, not a measure of speed.
    static let patience: Duration = .seconds(30)
    /// voiceboxd notices a wedge at once: a new utterance must begin within 0.3 s. Commands get 5 s:
    /// each probe's voice list holds up speech-dispatcher's other answers for a second or more, and
    /// probes this frequent must not make the heartbeat decide instead (see SpeechdRecoveryTests).
    static let quickWatchdog = ["--bound", "speechd-begin=0.3", "--bound", "speechd-reply=5"]

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

    /// Whether speech was heard on the sink after `position` (seconds into the recording), waiting
    /// for it up to `patience`.
    private func heard(_ ears: MonitorRecorder, after position: Double) async -> Bool {
        (try? await waitUntil("speech on the sink", timeout: Self.patience) { ears.firstLoud(after: position) != nil }) != nil
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
            let error = await Self.errorOf { _ = try await service.speak(ssml, ["ssml": .boolean(true)]) }
            XCTAssertEqual(error?.name, "org.voicebox.Error.InvalidArgument", "\(ssml.prefix(60))")
            XCTAssertTrue(error?.message.contains(reason) == true, "'\(error?.message ?? "")' lacks '\(reason)'")
        }
        XCTAssertTrue(service.signals.filter { $0.member == "SpeechMark" || $0.member == "SpeechStarted" }.isEmpty,
                      "a refused text gave signals: \(service.signals.map(\.member))")

        // speech-dispatcher still speaks, for us and for a program of its own.
        let ears = try stopsAtEnd(MonitorRecorder(device: stack.sink + ".monitor"))
        try await ears.waitUntilRecording()
        let other = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await other.close() }
        let position = ears.seconds
        let id = try await Self.speak(other, "Still speaking for everyone.")
        let loud = await heard(ears, after: position)
        XCTAssertTrue(loud, "nothing heard after the refused texts")
        _ = try await service.waitForFinish(id)
        let direct = try await runQuietly("/usr/bin/spd-say", ["-w", "direct"], seconds: 10)
        XCTAssertEqual(direct, 0, "spd-say -w did not finish: speech-dispatcher is frozen for other clients")
        // A valid mark still comes back as exactly what was sent.
        let marked = try await service.speak("<speak>one <mark name=\"m_1\"/> two</speak>", ["ssml": .boolean(true), "wait": .boolean(true)])
        XCTAssertEqual(service.events(of: marked), ["SpeechStarted", "SpeechMark:m_1", "SpeechFinished:done"])
    }

    /// The seeded corpus of hostile texts (line ends, dot lines, the end marker, control
    /// characters, long lines, XML) through voiceboxd into the real speech-dispatcher: afterwards
    /// another caller's Speak is heard.
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

        let ears = try stopsAtEnd(MonitorRecorder(device: stack.sink + ".monitor"))
        try await ears.waitUntilRecording()
        let other = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await other.close() }
        let position = ears.seconds
        let id = try await Self.speak(other, "Speech still works.")
        let loud = await heard(ears, after: position)
        XCTAssertTrue(loud, "another caller's speech was not heard after the corpus")
        let end = try await service.waitForFinish(id)
        XCTAssertEqual(end, "done")
    }

    // MARK: Recovery

    /// Frozen by another program's index mark: the next Speak from another caller is heard, after a
    /// restart; other callers are answered meanwhile; speech-dispatcher is back for every program, not
    /// only for us.
    func testAServerFrozenByAnotherProgramRecoversAndTheNextSpeakIsHeard() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack, Self.quickWatchdog, autospawn: true)
        try await waitUntilSpoken(service)
        let ears = try stopsAtEnd(MonitorRecorder(device: stack.sink + ".monitor"))
        try await ears.waitUntilRecording()
        let oldPid = speechd.pid
        try RawSSIPClient.freezeWithAMark(address: speechd.address)

        let caller = try BusConnection(address: stack.busAddress)
        let bystander = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await caller.close(); await bystander.close() }
        let position = ears.seconds
        let id = try await Self.speak(caller, "Speech is back.")
        try await Speech1.proxy(bystander).call(Speech1.stopSpeaking, 0)  // it has nothing: stops nothing
        _ = try await Speech1.proxy(bystander).get(Speech1.speaking)
        let loud = await heard(ears, after: position)
        XCTAssertTrue(loud, "the next Speak was never heard")
        let end = try await service.waitForFinish(id, timeout: Self.patience)
        XCTAssertEqual(end, "done")
        XCTAssertEqual(service.events(of: id), ["SpeechStarted", "SpeechFinished:done"])
        XCTAssertNotEqual(speechd.pid, oldPid, "speech-dispatcher was not restarted")
        let direct = try await runQuietly("/usr/bin/spd-say", ["-w", "direct"], output: nil, seconds: 20,
                                          environment: ["SPEECHD_ADDRESS": speechd.address])
        XCTAssertEqual(direct, 0, "speech-dispatcher is still frozen for other programs")
    }

    /// The output module frozen (SIGSTOP) in the middle of an utterance someone waits for: that
    /// caller gets EngineUnavailable saying what happened, the next Speak of another caller is heard
    /// after it, and nothing of the stopped server is left running.
    func testAModuleStoppedMidUtteranceRecoversAndTheWaitingCallerIsTold() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack, Self.quickWatchdog, autospawn: true)
        try await waitUntilSpoken(service)
        let ears = try stopsAtEnd(MonitorRecorder(device: stack.sink + ".monitor"))
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
        try await waitUntil("the long utterance to be heard", timeout: Self.patience) {
            service.signals.filter { $0.member == "SpeechStarted" }.count > startedBefore && ears.firstLoud() != nil
        }
        let server = try XCTUnwrap(SpeechdServerProcess.find(listeningOn: speechd.socket))
        let module = try XCTUnwrap(server.modules.first)
        XCTAssertEqual(kill(module, SIGSTOP), 0)
        addTeardownBlock { kill(module, SIGKILL) }
        // What was already played out drains; then silence: speech has stopped.
        try await waitForSilence(ears)

        let position = ears.seconds
        let id = try await Self.speak(caller, "After the freeze.")
        let error = await waiting.value
        XCTAssertEqual(error?.name, "org.voicebox.Error.EngineUnavailable")
        XCTAssertTrue(error?.message.contains("stopped speaking") == true, error?.message ?? "")
        let loud = await heard(ears, after: position)
        XCTAssertTrue(loud, "the next Speak was never heard")
        let end = try await service.waitForFinish(id, timeout: Self.patience)
        XCTAssertEqual(end, "done")
        XCTAssertFalse(SpeechdServerProcess.alive(module), "the stopped module was left running")
        XCTAssertFalse(SpeechdServerProcess.alive(server.pid), "the wedged server was left running")
    }

    /// A Speak made while speech-dispatcher is stopped is answered while it is still stopped, not
    /// when an answer comes (red team: it once took the 2 s reply bound): here voiceboxd gives
    /// speech-dispatcher a minute for every answer, and the watchdog as long, so a Speak that waited
    /// for one would still be waiting when the test gives up. Once the server continues, the
    /// utterance is heard.
    func testSpeakIsAnsweredWhileSpeechDispatcherIsStoppedAndHeardOnceItContinues() async throws {
        let stack = try Stack.require()
        let patient = ["--bound", "speechd-reply=60", "--bound", "speechd-begin=60", "--bound", "speechd-heartbeat=60"]
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack, patient, autospawn: true)
        try await waitUntilSpoken(service)
        let pid = try XCTUnwrap(speechd.pid)
        speechd.freeze()
        addTeardownBlock { speechd.thaw() }
        let ears = try stopsAtEnd(MonitorRecorder(device: stack.sink + ".monitor"))
        try await ears.waitUntilRecording()
        let position = ears.seconds
        let id = try await bounded(20, "Speak to a stopped speech-dispatcher") {
            try await service.speak("Spoken once speech-dispatcher continues.")
        }
        XCTAssertTrue(SpeechdServerProcess.isStopped(pid), "speech-dispatcher is still stopped")
        XCTAssertEqual(service.events(of: id), [])
        speechd.thaw()
        let loud = await heard(ears, after: position)
        XCTAssertTrue(loud, "not heard once speech-dispatcher continued")
        let end = try await service.waitForFinish(id, timeout: Self.patience)
        XCTAssertEqual(end, "done")
        XCTAssertEqual(speechd.pid, pid, "nothing was noticed: the server was not restarted")
    }

    /// StopAllSpeaking during a wedge answers; what it stopped stays stopped, and the next Speak is
    /// heard after the recovery (the stopped message, still in the frozen server, does not confuse it).
    func testStopAllSpeakingDuringAWedgeStopsForGoodAndTheNextSpeakIsHeard() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack, Self.quickWatchdog, autospawn: true)
        try await waitUntilSpoken(service)
        let oldPid = speechd.pid
        try RawSSIPClient.freezeWithAMark(address: speechd.address)
        let stuck = try await service.speak("This one is stopped while speech-dispatcher is frozen.")
        try await service.proxy.call(Speech1.stopAllSpeaking)
        let end = try await service.waitForFinish(stuck, timeout: Self.patience)
        XCTAssertEqual(end, "cancelled")

        let ears = try stopsAtEnd(MonitorRecorder(device: stack.sink + ".monitor"))
        try await ears.waitUntilRecording()
        let position = ears.seconds
        let next = try await service.speak("Heard after the stop.")
        let loud = await heard(ears, after: position)
        XCTAssertTrue(loud)
        let nextEnd = try await service.waitForFinish(next, timeout: Self.patience)
        XCTAssertEqual(nextEnd, "done")
        XCTAssertFalse(service.events(of: stuck).contains("SpeechStarted"), "a stopped utterance was spoken")
        XCTAssertNotEqual(speechd.pid, oldPid, "speech-dispatcher was not restarted")
    }

    /// A speech-dispatcher that dies (killed, as a crash would) on a socket where `--spawn` is
    /// refused ("Mismatch in socket names") is started again with its own command line: the next
    /// Speak is heard, by a new server process, and other programs can speak through it again.
    func testAServerThatDiesIsStartedAgainWithItsOwnCommandLine() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack, [], autospawn: true)
        try await waitUntilSpoken(service)
        let oldPid = try XCTUnwrap(speechd.pid)
        // The stock way does not work here: this is what the known server's command line is for.
        let spawn = try await runQuietly("/usr/bin/speech-dispatcher",
                                         ["--spawn", "--communication-method", "unix_socket", "--socket-path", speechd.socket],
                                         output: nil, seconds: 20)
        XCTAssertNotEqual(spawn, 0, "--spawn was not refused: the test would not tell the two ways apart")
        let ears = try stopsAtEnd(MonitorRecorder(device: stack.sink + ".monitor"))
        try await ears.waitUntilRecording()
        Glibc.kill(oldPid, SIGKILL)
        try await waitUntil("speech-dispatcher to die") { !SpeechdServerProcess.alive(oldPid) }
        let position = ears.seconds
        var id: UInt64 = 0
        try await waitUntil("Speak to be accepted", timeout: Self.patience) {
            id = (try? await service.speak("Spoken by a new speech-dispatcher.")) ?? 0
            return id != 0
        }
        let loud = await heard(ears, after: position)
        XCTAssertTrue(loud, "not heard after the server died")
        let end = try await service.waitForFinish(id, timeout: Self.patience)
        XCTAssertEqual(end, "done")
        let newPid = try XCTUnwrap(speechd.pid)
        XCTAssertNotEqual(newPid, oldPid)
        XCTAssertTrue(SpeechdServerProcess.alive(newPid), "the pid file names no running server")
        let direct = try await runQuietly("/usr/bin/spd-say", ["-w", "direct"], output: nil, seconds: 20,
                                          environment: ["SPEECHD_ADDRESS": speechd.address])
        XCTAssertEqual(direct, 0, "other programs cannot speak through the server started again")
    }
}
