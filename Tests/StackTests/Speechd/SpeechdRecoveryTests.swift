import Foundation
@testable import TestSupport
import VoiceboxCore
import XCTest
@testable import VoiceboxSpeechd

/// A speech-dispatcher that accepts speech but stops speaking it, wedged past the prevention: the
/// synthesizer notices, restarts the server and speaks what was queued behind. Each test has a
/// server of its own (PrivateSpeechd), frozen as another program could freeze it, and a synthesizer
/// whose watchdog bound is small (`speechd-begin` 0.3 s, not 3 s): the tests assert what happens once
/// it passes, and in which order; how soon with the standard bounds is SpeechdContractTests' (SpeedTests).
final class SpeechdRecoveryTests: SynthesizerTestCase {
    private var log = SynthesizerLog()
    /// A new utterance must begin within 0.3 s. An honest start takes up to 0.33 s (measured), so one
    /// may meet the watchdog too: the probe then finds the server busy and waits on, as for a slow one.
    /// Each probe's voice list keeps speech-dispatcher from answering anyone else for about a second
    /// (longer under load), and with probes this frequent the heartbeat's GET VOLUME can wait behind
    /// two of them: commands get 5 s here, not 2 s, so that only the watchdog decides what these tests
    /// are about.
    static let bounds = Bounds([.speechdBegin: .milliseconds(300), .speechdReply: .seconds(5)])

    override func tearDown() {
        super.tearDown()
        log = SynthesizerLog()
    }

    private func started() async throws -> PrivateSpeechd { try await startedServer() }

    private func connected(_ server: PrivateSpeechd, recovery: SpeechDispatcherSynthesizer.Recovery = .restart,
                           bounds: Bounds = SpeechdRecoveryTests.bounds, probeTimeout: Double? = nil,
                           autospawn: Bool = false) async throws -> (SpeechDispatcherSynthesizer, EventRecorder) {
        try await connected(server.address, bounds: bounds, recovery: recovery, autospawn: autospawn, probeTimeout: probeTimeout, log: log)
    }

    /// What speech-dispatcher 0.11.4 freezes on for every client, sent by a client of its own (not
    /// through the prevention). Whether it took shows in what follows: the server is restarted.
    private func freeze(_ server: PrivateSpeechd) throws {
        try RawSSIPClient.freezeWithAMark(address: server.address)
    }

    private func failure(of id: UInt64, _ recorder: EventRecorder) -> String? {
        for case .failed(id, let reason) in recorder.events { return reason }
        return nil
    }

    func testAServerFrozenByAnotherProgramIsRestartedAndWhatWasQueuedIsSpoken() async throws {
        let server = try await started()
        let (synthesizer, recorder) = try await connected(server)
        let oldServer = try XCTUnwrap(server.pid)
        let oldModules = try XCTUnwrap(SpeechdServerProcess.find(listeningOn: server.socket)).modules
        XCTAssertFalse(oldModules.isEmpty)
        try freeze(server)

        try await synthesizer.speak(SynthesisRequest(id: 1, text: "The first after the freeze."))
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Queued behind it."))
        // Neither had begun: both are given to the restarted server, and spoken in order.
        let first = await recorder.end(of: 1, timeout: 30)
        XCTAssertEqual(first, .done, "\(recorder.events)")
        let second = await recorder.end(of: 2, timeout: 30)
        XCTAssertEqual(second, .done)
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .finished(1, .done)])
        XCTAssertEqual(recorder.events(for: 2), [.started(2), .finished(2, .done)])
        XCTAssertLessThan(try XCTUnwrap(recorder.position(of: .started(1))), try XCTUnwrap(recorder.position(of: .started(2))))
        XCTAssertEqual(log.count(containing: "did not begin speaking within"), 1, "\(log.all)")

        // A new server under the same pid file; nothing of the frozen one is left.
        let newServer = try XCTUnwrap(server.pid)
        XCTAssertNotEqual(newServer, oldServer)
        for pid in [oldServer] + oldModules { XCTAssertFalse(SpeechdServerProcess.alive(pid), "pid \(pid) was left running") }
        // Every other client of the server speaks again too.
        let other = try RawSSIPClient(address: server.address, name: "after")
        let id = try XCTUnwrap(try other.speakRaw(RawSSIPClient.escaped("back")))
        XCTAssertTrue(other.waitForEvent(702, message: id, timeout: 20))
    }

    func testAServerWhoseModuleStopsMidUtteranceIsRestartedAndTheNextUtteranceIsSpoken() async throws {
        let server = try await started()
        let (synthesizer, recorder) = try await connected(server)
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        let speaking = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(speaking)
        let module = try XCTUnwrap(SpeechdServerProcess.find(listeningOn: server.socket)?.modules.first)
        XCTAssertEqual(kill(module, SIGSTOP), 0)
        addTeardownBlock { kill(module, SIGKILL) }

        try await synthesizer.speak(SynthesisRequest(id: 2, text: "After the freeze."))
        // The one being spoken when speech stopped ends with the reason; then the next is spoken.
        let first = await recorder.end(of: 1, timeout: 30)
        XCTAssertEqual(first, .error, "\(recorder.events)")
        let reason = try XCTUnwrap(failure(of: 1, recorder))
        XCTAssertTrue(reason.hasPrefix("speech-dispatcher stopped speaking: nothing for "), reason)
        XCTAssertTrue(reason.hasSuffix("and its output module did not answer (its output module (pid \(module)) is stopped)"), reason)
        let second = await recorder.end(of: 2, timeout: 30)
        XCTAssertEqual(second, .done, "\(recorder.events)")
        XCTAssertEqual(recorder.events(for: 2), [.started(2), .finished(2, .done)])
        XCTAssertLessThan(try XCTUnwrap(recorder.position(of: .finished(1, .error))), try XCTUnwrap(recorder.position(of: .started(2))))
        XCTAssertFalse(SpeechdServerProcess.alive(module), "the stopped module was left behind")
    }

    /// With `reconnect`, the server is never touched: the utterance that would not begin fails, the
    /// server keeps its pid.
    func testReconnectOnlyLeavesTheServerAlone() async throws {
        let server = try await started()
        let (synthesizer, recorder) = try await connected(server, recovery: .reconnect)
        let pid = server.pid
        try freeze(server)
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "Into the frozen server."))
        let end = await recorder.end(of: 1, timeout: 30)
        XCTAssertEqual(end, .error)
        XCTAssertTrue(failure(of: 1, recorder)?.hasPrefix("speech-dispatcher did not begin speaking within ") == true, "\(recorder.events)")
        XCTAssertEqual(server.pid, pid)
        if let pid { XCTAssertTrue(SpeechdServerProcess.alive(pid)) }
    }

    /// Speech that a healthy server has not begun because it speaks for another program is not a
    /// stall: the watchdog meets it, finds the server busy, and it waits its turn and is spoken.
    func testWaitingBehindAnotherProgramsLongSpeechIsNoStall() async throws {
        let server = try await started()
        let (synthesizer, recorder) = try await connected(server)
        let pid = server.pid
        let other = try RawSSIPClient(address: server.address, name: "reader")
        try other.command("SET self PRIORITY message")
        // Long enough for the watchdog to meet ours (at 0.3 s) and its probe to answer (a second or
        // two) before ours begins: else progress came first and there is nothing to judge.
        let long = "This sentence belongs to another program, which reads it out at length while ours waits its turn behind it."
        let otherID = try XCTUnwrap(try other.speakRaw(RawSSIPClient.escaped(long)))
        XCTAssertTrue(other.waitForEvent(701, message: otherID, timeout: 20))
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "My turn comes after."))
        let end = await recorder.end(of: 1, timeout: 60)
        XCTAssertEqual(end, .done, "\(recorder.events)")
        XCTAssertTrue(other.waitForEvent(702, message: otherID, timeout: 20), "the other program's speech was cut")
        XCTAssertGreaterThan(log.count(containing: "but its output module answers: waiting on"), 0,
                             "the wait never met the watchdog: \(log.all)")
        XCTAssertEqual(log.count(containing: "recovering"), 0, "\(log.all)")
        XCTAssertEqual(server.pid, pid, "a busy server was restarted")
    }

    /// Wedges that come one after another, speech spoken in between, are each recovered at once:
    /// the restart backoff starts over once the restarted server speaks (red team: 4.3, 4.5, 9.3,
    /// 23.6 s for four freezes 8–15 s apart, the backoff never reset). Here the backoff is 30 s
    /// (`speechd-restart-first`): a second restart that waited for it would not come within the
    /// round's 20 s, so a backoff not started over fails the second round. Odd rounds stop the module
    /// mid-utterance, even ones freeze the idle server with another program's mark: four rounds
    /// follow each kind by the other.
    func testWedgesInARowAreEachRecoveredWithoutWaitingForTheBackoff() async throws {
        let server = try await started()
        var bounds = Self.bounds
        bounds[.speechdRestartFirst] = .seconds(30)
        let (synthesizer, recorder) = try await connected(server, bounds: bounds)
        for round in 1...4 {
            let id = UInt64(round * 10)
            let wedged = try XCTUnwrap(server.pid)
            if round % 2 == 1 {
                try await synthesizer.speak(SynthesisRequest(id: id, text: SynthesisRequest.longText))
                let speaking = await recorder.wait(for: .started(id), timeout: 20)
                XCTAssertTrue(speaking, "round \(round): \(recorder.events.suffix(6))")
                let module = try XCTUnwrap(SpeechdServerProcess.find(listeningOn: server.socket)?.modules.first)
                XCTAssertEqual(kill(module, SIGSTOP), 0)
            } else {
                try freeze(server)
            }
            try await synthesizer.speak(SynthesisRequest(id: id + 1, text: "Round \(round) is over."))
            let end = await recorder.end(of: id + 1, timeout: 20)
            XCTAssertEqual(end, .done, "round \(round): \(recorder.events.suffix(6)); \(log.all.suffix(4))")
            XCTAssertNotEqual(server.pid, wedged, "round \(round): the wedged server was not restarted")
            guard end == .done else { return }
        }
        XCTAssertEqual(log.count(containing: "; recovering"), 4, "one recovery per wedge: \(log.all)")
    }

    /// A killed server's listening socket can outlive its connections for a moment (seen in CI): the
    /// first connection after the death is taken and then reset, and nobody is left to find behind
    /// it. The server known from before is still started again with its own command line (autospawn),
    /// and what was asked meanwhile is spoken, not failed. The test holds a duplicate of the listening
    /// socket for 0.5 s, as the dying server's kernel does for a moment; the connection taken on it
    /// goes unanswered for `speechd-reply` (0.5 s here) or is reset when it is let go.
    func testAServerWhoseSocketOutlivesItForAMomentIsStartedAgain() async throws {
        let server = try await started()
        var bounds = Self.bounds
        bounds[.speechdReply] = .milliseconds(500)
        let (synthesizer, recorder) = try await connected(server, bounds: bounds, autospawn: true)
        let oldPid = try XCTUnwrap(server.pid)
        let held = try XCTUnwrap(duplicateOfListeningSocket(server.socket, heldBy: oldPid))
        XCTAssertEqual(kill(oldPid, SIGKILL), 0)
        // The connection's end is seen (and a new one taken on the socket still held).
        let lost = await log.wait(for: "speech-dispatcher closed the connection; recovering")
        XCTAssertTrue(lost, "\(log.all)")
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "Spoken by the server started again."))
        try await Task.sleep(for: .milliseconds(500))  // how long the kernel holds it, as above
        close(held)
        let end = await recorder.end(of: 1, timeout: 30)
        XCTAssertEqual(end, .done, "\(recorder.events)")
        let newPid = try XCTUnwrap(server.pid)
        XCTAssertNotEqual(newPid, oldPid)
        XCTAssertTrue(SpeechdServerProcess.alive(newPid))
    }

    /// Long speech without a mark gives no event for many seconds; the probe's voice list may not
    /// come in time (it took 2.5–3 s on a loaded machine; here, given 0.3 s, it never does: building
    /// it takes speech-dispatcher a second). A server that works meanwhile is busy, not wedged: the
    /// watchdog meets the speech again and again, and it is not cut nor the server restarted.
    /// (With 0.001 s for the probe, the work was looked for over a millisecond, and under PipeWire
    /// none was seen there.)
    func testLongSpeechIsNotCutWhenTheVoiceListIsSlow() async throws {
        let server = try await started()
        // A probe whose list never comes in time does not wait for it, so speech-dispatcher may still
        // be building one when the next comes: 1 s apart at least, so that they do not pile up.
        var bounds = Self.bounds
        bounds[.speechdBegin] = .seconds(1)
        let (synthesizer, recorder) = try await connected(server, bounds: bounds, probeTimeout: 0.3)
        let pid = server.pid
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        let end = await recorder.end(of: 1, timeout: 60)
        XCTAssertEqual(end, .done, "\(recorder.events)")
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .finished(1, .done)])
        // Met at 1 s, then 2 s and 4 s after each probe: at least twice in an utterance of 8 s or so.
        XCTAssertGreaterThanOrEqual(log.count(containing: "but its output module answers: waiting on"), 2,
                                    "the speech did not meet the watchdog: \(log.all)")
        XCTAssertEqual(log.count(containing: "recovering"), 0, "\(log.all)")
        XCTAssertEqual(server.pid, pid, "a busy server was restarted")
    }

    /// An output module that crashes (measured: Debian 12's sd_espeak-ng died with "stack smashing
    /// detected" partway through the corpus below) leaves speech-dispatcher answering every command
    /// and speaking nothing, for every client, until restarted. It is noticed like a stopped module:
    /// its voice list fails (321).
    func testAServerWhoseModuleCrashedIsRestartedAndTheNextUtteranceIsSpoken() async throws {
        let server = try await started()
        let (synthesizer, recorder) = try await connected(server)
        let module = try XCTUnwrap(SpeechdServerProcess.find(listeningOn: server.socket)?.modules.first)
        let oldServer = server.pid
        XCTAssertEqual(kill(module, SIGSEGV), 0)
        try await waitUntil("the module to die", timeout: .seconds(20)) { !SpeechdServerProcess.alive(module) }
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "After the crash."))
        let end = await recorder.end(of: 1, timeout: 30)
        XCTAssertEqual(end, .done, "\(recorder.events)")
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .finished(1, .done)])
        XCTAssertEqual(log.count(containing: "did not begin speaking within"), 1, "\(log.all)")
        XCTAssertNotEqual(server.pid, oldServer, "the server was not restarted")
        let other = try RawSSIPClient(address: server.address, name: "after")
        let id = try XCTUnwrap(try other.speakRaw(RawSSIPClient.escaped("back")))
        XCTAssertTrue(other.waitForEvent(702, message: id, timeout: 20))
    }

    /// The encoder's corpus (SSIPEncoderPropertyTests) through a real speech-dispatcher, each text at
    /// priority `text` and stopped at the end; once our next utterance is spoken, speech-dispatcher
    /// speaks for another client. Whatever the corpus did to the server on the way (it crashed the
    /// output module in two of three runs of 20,000) recovery has undone by then.
    /// VOICEBOX_CORPUS_SIZE changes the count (20,000; about 150 s).
    func testTheWholeCorpusLeavesSpeechDispatcherSpeakingForOthers() async throws {
        // By hand only (2–3 minutes). Before the SSML bounds on attributes and bare breaks, one run
        // in four ended with speech-dispatcher answering every command and speaking nothing, its
        // module alive, which recovery does not notice (docs/speech.md); five of five pass since.
        try XCTSkipIf(ProcessInfo.processInfo.environment["VOICEBOX_CORPUS_SIZE"] == nil,
                      "set VOICEBOX_CORPUS_SIZE (20000) to send the corpus through speech-dispatcher")
        let server = try await started()
        let (synthesizer, recorder) = try await connected(server)
        let count = Int(ProcessInfo.processInfo.environment["VOICEBOX_CORPUS_SIZE"] ?? "") ?? 20_000
        var corpus = SpeechCorpus(seed: 0x5EED_15)
        var accepted = 0, refused = 0
        let started = ContinuousClock.now
        for index in 0..<count {
            let ssml = index % 5 == 4
            let text = ssml ? corpus.ssml() : corpus.text()
            do {
                try await synthesizer.speak(SynthesisRequest(id: UInt64(index + 1), text: text, ssml: ssml, priority: .text))
                accepted += 1
            } catch SynthesizerError.rejected {
                refused += 1  // SSML the check refuses
            }
        }
        let restarts = recorder.events.filter { if case .unavailable = $0 { true } else { false } }.count
        print("METRIC corpus through speech-dispatcher: \(accepted) accepted, \(refused) refused, in \(ContinuousClock.now - started); recoveries: \(restarts)")
        await synthesizer.stop((1...UInt64(count)).map { $0 })
        // Our next utterance is spoken: a module that crashed near the end, with nothing of ours
        // left in the server, is noticed only now, and recovered.
        let last = UInt64(count + 1)
        try await synthesizer.speak(SynthesisRequest(id: last, text: "The corpus is over."))
        let end = await recorder.end(of: last, timeout: 30)
        XCTAssertEqual(end, .done, "\(recorder.events.suffix(8))")

        let other = try RawSSIPClient(address: server.address, name: "after-the-corpus")
        let id = try XCTUnwrap(try other.speakRaw(RawSSIPClient.escaped("still speaking")))
        XCTAssertTrue(other.waitForEvent(701, message: id, timeout: 20), "another client's speech did not begin")
        XCTAssertTrue(other.waitForEvent(702, message: id, timeout: 20), "another client's speech did not end")
    }
}
