import Foundation
import Glibc
@testable import TestSupport
import VoiceboxCore
import XCTest
@testable import VoiceboxSpeechd

/// The synthesizer's connection to a real speech-dispatcher, mostly one of the test's own: the
/// server dying, starting late, freezing; no thread or CPU of its own while idle. Where a bound must
/// pass it is made small, or, to show that nothing waits for it, huge (the configuration's `bounds`).
final class SpeechdConnectionTests: SynthesizerTestCase {
    func testServerDeathEndsUtterancesWithErrorAndRestartReconnects() async throws {
        _ = try TestStack.address()
        let server = try await ownSpeechd(config: try TestStack.configDirectory(), start: false)
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
        let server = try await ownSpeechd(config: try TestStack.configDirectory(), start: false)
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
        let server = try await ownSpeechd(config: try TestStack.configDirectory(), start: false)
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
        // Checked before the start: once start() returns the server accepts, and the synthesizer's
        // next try (every 0.2 s) may connect before a check after it.
        XCTAssertFalse(recorder.events.contains(.available), "connected to a server before it started")

        try await server.start()  // a second or more, in which the synthesizer tries several times
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
        let server = try await ownSpeechd(config: try TestStack.configDirectory(), start: false)
        try await server.start()
        let patient = Bounds([.speechdReply: .seconds(60), .speechdBegin: .seconds(60), .speechdHeartbeat: .seconds(60)])
        let (synthesizer, recorder) = try await connected(server.address, bounds: patient, recovery: .reconnect)
        try await synthesizer.speak(SynthesisRequest(id: 1, text: SynthesisRequest.longText))
        let began = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(began)
        let pid = try XCTUnwrap(server.pid)
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        addTeardownBlock { kill(pid, SIGCONT) }

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
        let server = try await ownSpeechd(config: try TestStack.configDirectory(), start: false)
        try await server.start()
        var bounds = Self.quickReconnect
        bounds[.speechdReply] = .milliseconds(300)
        let (synthesizer, recorder) = try await connected(server.address, bounds: bounds, recovery: .reconnect)
        // Short: the server, continued, speaks the rest of it before anything else (nobody stopped
        // it there: our connection was gone).
        try await synthesizer.speak(SynthesisRequest(id: 1, text: "One, two, three, four."))
        let began = await recorder.wait(for: .started(1), timeout: 20)
        XCTAssertTrue(began)
        let pid = try XCTUnwrap(server.pid)
        XCTAssertEqual(kill(pid, SIGSTOP), 0)
        addTeardownBlock { kill(pid, SIGCONT) }

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
}
