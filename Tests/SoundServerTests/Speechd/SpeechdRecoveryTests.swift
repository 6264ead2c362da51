import Foundation
@testable import TestSupport
import VoiceboxCore
import XCTest
@testable import VoiceboxSpeechd

/// A speech-dispatcher that accepts speech but stops speaking it, wedged past the prevention: the
/// synthesizer notices within its bounds, restarts the server and speaks what was queued behind.
/// Each test has a server of its own (PrivateSpeechd), frozen as another program could freeze it.
// @SoundServer: speech-dispatcher plays into the sound server; its events follow the playback
final class SpeechdRecoveryTests: XCTestCase {
    private var synthesizers: [SpeechDispatcherSynthesizer] = []
    private var servers: [PrivateSpeechd] = []
    /// The documented bound: no progress for 3 s, then the output module's 2 s to answer.
    static let noticed = Bound.speechdBegin.standard.inSeconds + 2

    override func tearDown() {
        for synthesizer in synthesizers { synthesizer.shutdown() }
        synthesizers.removeAll()
        servers.removeAll()
        super.tearDown()
    }

    private func started() async throws -> PrivateSpeechd {
        _ = try TestStack.address()
        let server = try PrivateSpeechd(config: try TestStack.configDirectory())
        servers.append(server)
        try await server.start()
        return server
    }

    private func connected(_ server: PrivateSpeechd, recovery: SpeechDispatcherSynthesizer.Recovery = .restart,
                           probeTimeout: Double? = nil, autospawn: Bool = false) async throws -> (SpeechDispatcherSynthesizer, EventRecorder) {
        var configuration = SpeechDispatcherSynthesizer.Configuration(address: server.address, autospawn: autospawn,
                                                                      clientName: "voicebox-tests", recovery: recovery,
                                                                      log: { print("synthesizer: " + $0) })
        configuration.probeTimeout = probeTimeout
        let synthesizer = SpeechDispatcherSynthesizer(configuration: configuration)
        synthesizers.append(synthesizer)
        let recorder = EventRecorder(synthesizer)
        guard await recorder.wait(for: .available, timeout: 10) else { throw SynthesizerError.unavailable("no .available") }
        return (synthesizer, recorder)
    }

    /// What speech-dispatcher 0.11.4 freezes on for every client: a mark name holding a line of only
    /// a dot, sent by a client of its own (not through the prevention).
    private func freeze(_ server: PrivateSpeechd) throws {
        let other = try RawSSIPClient(address: server.address, name: "freezer")
        try other.command("SET self SSML_MODE on")
        try other.speakRaw(RawSSIPClient.escaped("<speak><mark name=\"a\n.\nb\"/>x</speak>"))
        // Frozen indeed: nothing else begins.
        let checker = try RawSSIPClient(address: server.address, name: "checker")
        let id = try XCTUnwrap(try checker.speakRaw(RawSSIPClient.escaped("check")))
        XCTAssertFalse(checker.waitForEvent(701, message: id, timeout: 1.5), "the freeze did not take")
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

        let spoke = ContinuousClock.now
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "The first after the freeze."))
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "Queued behind it."))
        // Stopping never waits, wedged or not.
        let stopStart = ContinuousClock.now
        await synthesizer.stop([99])
        XCTAssertLessThan(ContinuousClock.now - stopStart, .milliseconds(50))

        // Neither had begun: both are given to the restarted server, in order.
        let began = await recorder.wait(for: .started(1), timeout: 10)
        XCTAssertTrue(began, "\(recorder.events)")
        let took = (recorder.time(of: .started(1)) ?? .now) - spoke
        print("METRIC speech-dispatcher frozen by a mark → the next utterance begins: \(took)")
        XCTAssertLessThan(took, .seconds(Self.noticed + 2), "not recovered within the bound plus 2 s")
        let first = await recorder.end(of: 1, timeout: 10)
        XCTAssertEqual(first, .done)
        let second = await recorder.end(of: 2, timeout: 10)
        XCTAssertEqual(second, .done)
        XCTAssertEqual(recorder.events(for: 1), [.started(1), .finished(1, .done)])
        XCTAssertEqual(recorder.events(for: 2), [.started(2), .finished(2, .done)])
        XCTAssertLessThan(recorder.time(of: .started(1))!, recorder.time(of: .started(2))!)

        // A new server under the same pid file; nothing of the frozen one is left.
        let newServer = try XCTUnwrap(server.pid)
        XCTAssertNotEqual(newServer, oldServer)
        for pid in [oldServer] + oldModules { XCTAssertFalse(SpeechdServerProcess.alive(pid), "pid \(pid) was left running") }
        // Every other client of the server speaks again too.
        let other = try RawSSIPClient(address: server.address, name: "after")
        let id = try XCTUnwrap(try other.speakRaw(RawSSIPClient.escaped("back")))
        XCTAssertTrue(other.waitForEvent(702, message: id, timeout: 5))
    }

    func testAServerWhoseModuleStopsMidUtteranceIsRestartedAndTheNextUtteranceIsSpoken() async throws {
        let server = try await started()
        let (synthesizer, recorder) = try await connected(server)
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        let speaking = await recorder.wait(for: .started(1), timeout: 10)
        XCTAssertTrue(speaking)
        let module = try XCTUnwrap(SpeechdServerProcess.find(listeningOn: server.socket)?.modules.first)
        XCTAssertEqual(kill(module, SIGSTOP), 0)
        defer { kill(module, SIGKILL) }
        try await Task.sleep(for: .milliseconds(300))

        let spoke = ContinuousClock.now
        try await synthesizer.speak(SynthesisRequest(id: 2, text: "After the freeze."))
        let accepted = ContinuousClock.now - spoke
        XCTAssertLessThan(accepted, .seconds(3), "speak() was held up by the wedged server")
        // The one being spoken when speech stopped ends with the reason; the next is spoken.
        let first = await recorder.end(of: 1, timeout: 10)
        XCTAssertEqual(first, .error, "\(recorder.events)")
        let reason = try XCTUnwrap(failure(of: 1, recorder))
        XCTAssertTrue(reason.hasPrefix("speech-dispatcher stopped speaking: nothing for 3 s, and its output module did not answer"), reason)
        let began = await recorder.wait(for: .started(2), timeout: 15)
        XCTAssertTrue(began, "\(recorder.events)")
        let took = (recorder.time(of: .started(2)) ?? .now) - spoke
        print("METRIC speech-dispatcher's module stopped → the next utterance begins: \(took)")
        XCTAssertLessThan(took, .seconds(Self.noticed + 2), "not recovered within the bound plus 2 s")
        let second = await recorder.end(of: 2, timeout: 10)
        XCTAssertEqual(second, .done)
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
        let end = await recorder.end(of: 1, timeout: 10)
        XCTAssertEqual(end, .error)
        XCTAssertEqual(server.pid, pid)
        if let pid { XCTAssertTrue(SpeechdServerProcess.alive(pid)) }
    }

    /// Speech that a healthy server has not begun because it speaks for another program is not a
    /// stall: it waits its turn and is spoken.
    func testWaitingBehindAnotherProgramsLongSpeechIsNoStall() async throws {
        let server = try await started()
        let (synthesizer, recorder) = try await connected(server)
        let pid = server.pid
        let other = try RawSSIPClient(address: server.address, name: "reader")
        try other.command("SET self PRIORITY message")
        let long = String(repeating: "This sentence belongs to another program, read out at length. ", count: 4)
        let otherID = try XCTUnwrap(try other.speakRaw(RawSSIPClient.escaped(long)))
        XCTAssertTrue(other.waitForEvent(701, message: otherID, timeout: 5))
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "My turn comes after."))
        let end = await recorder.end(of: 1, timeout: 60)
        XCTAssertEqual(end, .done, "\(recorder.events)")
        XCTAssertTrue(other.waitForEvent(702, message: otherID, timeout: 1), "the other program's speech was cut")
        XCTAssertEqual(server.pid, pid, "a busy server was restarted")
    }

    /// Wedges that come one after another, speech spoken in between, are each recovered within the
    /// bound plus 2 s: the restart backoff starts over once the restarted server speaks (red team:
    /// 4.3, 4.5, 9.3, 23.6 s for four freezes 8–15 s apart, the backoff never reset). Odd rounds stop
    /// the module mid-utterance, even ones freeze the idle server with another program's mark.
    func testWedgesInARowAreEachRecoveredInTime() async throws {
        let server = try await started()
        let (synthesizer, recorder) = try await connected(server)
        for round in 1...6 {
            let id = UInt64(round * 10)
            if round % 2 == 1 {
                try await synthesizer.speak(SynthesisRequest(id: id, text: SynthesisRequest.longText))
                let speaking = await recorder.wait(for: .started(id), timeout: 15)
                XCTAssertTrue(speaking, "round \(round): \(recorder.events.suffix(6))")
                let module = try XCTUnwrap(SpeechdServerProcess.find(listeningOn: server.socket)?.modules.first)
                XCTAssertEqual(kill(module, SIGSTOP), 0)
                try await Task.sleep(for: .milliseconds(200))
            } else {
                try freeze(server)
            }
            let spoke = ContinuousClock.now
            try await synthesizer.speak(SynthesisRequest(id: id + 1, text: "Round \(round) is over."))
            let began = await recorder.wait(for: .started(id + 1), timeout: 40)
            XCTAssertTrue(began, "round \(round): \(recorder.events.suffix(6))")
            let took = (recorder.time(of: .started(id + 1)) ?? .now) - spoke
            print("METRIC wedge \(round) in a row → the next utterance begins: \(took)")
            XCTAssertLessThan(took, .seconds(Self.noticed + 2), "round \(round): not recovered within the bound plus 2 s")
            let end = await recorder.end(of: id + 1, timeout: 10)
            XCTAssertEqual(end, .done)
        }
    }

    /// A killed server's listening socket can outlive its connections for a moment (seen in CI): the
    /// first connection after the death is taken and then reset, and nobody is left to find behind
    /// it. The server known from before is still started again with its own command line (autospawn),
    /// and what was asked meanwhile is spoken, not failed. The test holds a duplicate of the listening
    /// socket for 0.5 s, as the dying server's kernel does for a moment.
    func testAServerWhoseSocketOutlivesItForAMomentIsStartedAgain() async throws {
        let server = try await started()
        let (synthesizer, recorder) = try await connected(server, autospawn: true)
        let oldPid = try XCTUnwrap(server.pid)
        let held = try XCTUnwrap(Self.duplicateOfListeningSocket(server.socket, heldBy: oldPid))
        XCTAssertEqual(kill(oldPid, SIGKILL), 0)
        let deadline = ContinuousClock.now + .seconds(5)
        while SpeechdServerProcess.alive(oldPid), ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        try await Task.sleep(for: .milliseconds(100))  // the connection's end is seen, a new one is taken
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "Spoken by the server started again."))
        try await Task.sleep(for: .milliseconds(500))
        close(held)
        let began = await recorder.wait(for: .started(1), timeout: 15)
        XCTAssertTrue(began, "\(recorder.events)")
        let end = await recorder.end(of: 1, timeout: 15)
        XCTAssertEqual(end, .done, "\(recorder.events)")
        let newPid = try XCTUnwrap(server.pid)
        XCTAssertNotEqual(newPid, oldPid)
        XCTAssertTrue(SpeechdServerProcess.alive(newPid))
    }

    /// The listening socket bound to `path` in process `pid`, duplicated into this one
    /// (pidfd_getfd, Linux 5.6, glibc 2.36), or nil.
    private static func duplicateOfListeningSocket(_ path: String, heldBy pid: pid_t) -> Int32? {
        guard let table = try? String(contentsOfFile: "/proc/net/unix", encoding: .utf8),
              let line = table.split(separator: "\n").first(where: { $0.hasSuffix(" " + path) && $0.contains(" 00010000 ") }),
              let inode = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(6).first else { return nil }
        let fdDirectory = "/proc/\(pid)/fd"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: fdDirectory),
              let number = entries.first(where: {
                  (try? FileManager.default.destinationOfSymbolicLink(atPath: fdDirectory + "/" + $0)) == "socket:[\(inode)]"
              }).flatMap({ Int32($0) }) else { return nil }
        typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
        typealias PidfdGetfd = @convention(c) (Int32, Int32, UInt32) -> Int32
        guard let open = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_open"),
              let getfd = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_getfd") else { return nil }
        let pidfd = unsafeBitCast(open, to: PidfdOpen.self)(pid, 0)
        guard pidfd >= 0 else { return nil }
        defer { close(pidfd) }
        let duplicate = unsafeBitCast(getfd, to: PidfdGetfd.self)(pidfd, number, 0)
        return duplicate >= 0 ? duplicate : nil
    }

    /// Long speech without a mark gives no event for many seconds; the probe's voice list may not
    /// come in time (it took 2.5–3 s on a loaded machine; here it never does). A server that works
    /// meanwhile is busy, not wedged: the speech is not cut and the server not restarted.
    func testLongSpeechIsNotCutWhenTheVoiceListIsSlow() async throws {
        let server = try await started()
        let (synthesizer, recorder) = try await connected(server, probeTimeout: 0.001)
        let pid = server.pid
        let text = Array(repeating: SynthesisRequest.longText, count: 2).joined(separator: " ")
        try await synthesizer.speak(SynthesisRequest(id: 1, text: text))
        let end = await recorder.end(of: 1, timeout: 60)
        XCTAssertEqual(end, .done, "\(recorder.events)")
        let took = (recorder.time(of: .finished(1, .done)) ?? .now) - (recorder.time(of: .started(1)) ?? .now)
        print("METRIC one utterance without marks spoken for \(took), not cut")
        XCTAssertGreaterThan(took, .seconds(Self.noticed + 1), "too short to have met the watchdog")
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
        XCTAssertEqual(kill(module, SIGSEGV), 0)
        try await Task.sleep(for: .milliseconds(300))
        let spoke = ContinuousClock.now
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "After the crash."))
        let began = await recorder.wait(for: .started(1), timeout: 15)
        XCTAssertTrue(began, "\(recorder.events)")
        let took = (recorder.time(of: .started(1)) ?? .now) - spoke
        print("METRIC speech-dispatcher's module crashed → the next utterance begins: \(took)")
        XCTAssertLessThan(took, .seconds(Self.noticed + 2), "not recovered within the bound plus 2 s")
        let end = await recorder.end(of: 1, timeout: 10)
        XCTAssertEqual(end, .done)
        let other = try RawSSIPClient(address: server.address, name: "after")
        let id = try XCTUnwrap(try other.speakRaw(RawSSIPClient.escaped("back")))
        XCTAssertTrue(other.waitForEvent(702, message: id, timeout: 5))
    }

    /// The encoder's corpus (SSIPEncoderPropertyTests) through a real speech-dispatcher, each text at
    /// priority `text` and stopped at the end; once our next utterance is spoken, speech-dispatcher
    /// speaks for another client within 1 s. Whatever the corpus did to the server on the way (it
    /// crashed the output module in two of three runs of 20,000) recovery has undone by then. VOICEBOX_CORPUS_SIZE changes the
    /// count (20,000; about 150 s).
    func testTheWholeCorpusLeavesSpeechDispatcherSpeakingForOthers() async throws {
        // By hand only (2–3 minutes). Before the SSML bounds on attributes and bare breaks, one run
        // in four ended with speech-dispatcher answering every command and speaking nothing, its
        // module alive, which recovery does not notice (see the README); five of five pass since.
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
        // left in the server, is noticed only now (within `noticed`), and recovered.
        let last = UInt64(count + 1)
        try await synthesizer.speak(SynthesisRequest(id: last, text: "The corpus is over."))
        let end = await recorder.end(of: last, timeout: Self.noticed + 15)
        XCTAssertEqual(end, .done, "\(recorder.events.suffix(8))")

        let other = try RawSSIPClient(address: server.address, name: "after-the-corpus")
        let asked = ContinuousClock.now
        let id = try XCTUnwrap(try other.speakRaw(RawSSIPClient.escaped("still speaking")))
        let begun = other.waitForEvent(701, message: id, timeout: 10)
        print("METRIC corpus: another client's speech began after \(ContinuousClock.now - asked)")
        XCTAssertTrue(begun && ContinuousClock.now - asked < .seconds(1), "another client's speech did not begin within 1 s")
        XCTAssertTrue(other.waitForEvent(702, message: id, timeout: 5))
    }
}
