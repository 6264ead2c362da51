import Foundation
import Glibc
@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import XCTest
@testable import VoiceboxWorkers

/// The service's side of voicebox-audio, against stand-in helpers (shell scripts, no sound server):
/// the bounds it takes from `Bounds` (helper-*) are the ones it keeps, and what follows each.
final class AudioHelperBoundsTests: XCTestCase {
    /// A stand-in helper that notes its pid in `started` and runs `body`.
    private func standIn(_ body: String) throws -> (path: String, started: String) {
        let directory = try makeTemporaryDirectory(self)
        let path = directory.appendingPathComponent("voicebox-audio").path
        let started = directory.appendingPathComponent("started").path
        try "#!/bin/sh\necho $$ >> \(started)\n\(body)\n".write(toFile: path, atomically: true, encoding: .utf8)
        XCTAssertEqual(chmod(path, 0o755), 0)
        return (path, started)
    }

    private func pids(_ started: String) -> [pid_t] {
        ((try? String(contentsOfFile: started, encoding: .utf8)) ?? "").split(separator: "\n").compactMap { pid_t($0) }
    }

    /// The pause before each replacement, at the standard bounds: 0.1 s doubling to 5 s.
    func testReplacementsPauseLongerWhileTheyKeepFailing() {
        let pauses = (0..<9).map {
            AudioHelper.pause(afterFailures: $0, first: Bound.helperRestartFirst.standard, limit: Bound.helperRestartLimit.standard)
        }
        XCTAssertEqual(pauses, [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000].map { .milliseconds($0) })
        XCTAssertEqual(AudioHelper.pause(afterFailures: 3, first: .milliseconds(50), limit: .seconds(1)), .milliseconds(400))
        XCTAssertEqual(AudioHelper.pause(afterFailures: 1000, first: .milliseconds(50), limit: .seconds(1)), .seconds(1))
    }

    /// A helper that takes a request and never answers is killed at helper-answer (0.3 s here, 8 s
    /// as standard), the request is lost naming that bound, and a replacement starts.
    func testAHelperThatDoesNotAnswerIsKilledAtItsBoundAndReplaced() async throws {
        let (path, started) = try standIn("exec cat <&3 >/dev/null")  // reads requests, answers none
        let helper = AudioHelper(helperPath: path, bounds: Bounds([.helperAnswer: .milliseconds(300)]))
        addTeardownBlock { await helper.shutdown() }
        try await waitUntil("the helper to start") { self.pids(started).count == 1 }
        let first = pids(started)[0]
        let reply = await helper.ask(.ping)
        guard case .lost(let why) = reply else { return XCTFail("\(reply)") }
        XCTAssert(why.contains("did not answer within 0.3 seconds") || why.contains("killed by SIGKILL"), why)  // (as below)
        try await waitUntil("the silent helper to be gone") { kill(first, 0) != 0 }
        try await waitUntil("a replacement to start") { self.pids(started).count == 2 }
    }

    /// While a recording is open, the helper is pinged every helper-ping (0.2 s here): one that
    /// answers the open but nothing after is killed, and the recording ends as serverUnavailable
    /// naming the bound, instead of waiting for samples for ever.
    func testARecordingWhoseHelperStopsAnsweringEndsAtThePing() async throws {
        // Takes the first request (the open, id 1), answers it `done`, then reads on without answering.
        let answer = Self.octal(AudioHelperProtocol.frame(.answer, json: AudioHelperProtocol.Answer(id: 1, outcome: .done)))
        let (path, started) = try standIn("head -c 5 <&3 >/dev/null\nprintf '\(answer)' >&3\nexec cat <&3 >/dev/null")
        let helper = AudioHelper(helperPath: path, bounds: Bounds([.helperPing: .milliseconds(200)]))
        addTeardownBlock { await helper.shutdown() }
        try await waitUntil("the helper to start") { self.pids(started).count == 1 }
        let recording = try await helper.open(source: nil)
        try await waitUntil("the recording to fail", timeout: .seconds(30)) { await recording.failure != nil }
        let failure = await recording.failure
        guard case .serverUnavailable(let why) = failure else { return XCTFail("\(String(describing: failure))") }
        // The ping's bound kills it; on a loaded machine the news of its death can come first.
        XCTAssert(why.contains("did not answer within 0.2 seconds") || why.contains("killed by SIGKILL"), why)
    }

    /// A helper that cannot be started (no such file) fails calls as unavailable, saying so, after
    /// at most helper-start-failed.
    func testAHelperThatCannotStartFailsCallsAsUnavailable() async throws {
        let helper = AudioHelper(helperPath: "/nonexistent/voicebox-audio", bounds: Bounds([.helperStartFailed: .milliseconds(100)]))
        addTeardownBlock { await helper.shutdown() }
        do {
            _ = try await helper.serverInfo()
            XCTFail("server info from a helper that cannot start")
        } catch MixerError.unavailable(let why) {
            XCTAssert(why.contains("cannot start the audio helper"), why)
        }
    }

    /// A helper that takes no request (a request larger than the socket holds, 2 MB) is killed at
    /// helper-write (0.3 s here, 2 s as standard), not at helper-answer (a give-up here: 60 s,
    /// whose end would be named otherwise), and replaced: the request is lost naming how it ended.
    func testAHelperThatTakesNoRequestIsKilledAtTheWriteBoundAndReplaced() async throws {
        let (path, started) = try standIn("exec sleep 120")  // holds its end, reads nothing
        let helper = AudioHelper(helperPath: path, bounds: Bounds([.helperWrite: .milliseconds(300), .helperAnswer: .seconds(60)]))
        addTeardownBlock { await helper.shutdown() }
        try await waitUntil("the helper to start") { self.pids(started).count == 1 }
        let first = pids(started)[0]
        let reply = await helper.ask(.remember([RememberedSetting(name: String(repeating: "x", count: 2_000_000))]))
        guard case .lost(let why) = reply else { return XCTFail("\(reply)") }
        XCTAssertEqual(why, "the audio helper killed by SIGKILL (Killed)")
        XCTAssertNotEqual(kill(first, 0), 0, "reaped before the request fails")
        try await waitUntil("a replacement to start") { self.pids(started).count == 2 }
    }

    /// An answer that comes in pieces 0.1 s apart, so that the socket cuts it, is read whole
    /// (helper-answer a give-up here: 60 s).
    func testAnAnswerCutIntoPiecesIsReadWhole() async throws {
        let answer = AudioHelperProtocol.frame(.answer, json: AudioHelperProtocol.Answer(id: 1, outcome: .index(7)))
        let pieces = [answer[0..<3], answer[3..<9], answer[9...]].map { "printf '\(Self.octal(Array($0)))' >&3" }
        let (path, _) = try standIn("head -c 5 <&3 >/dev/null\n" + pieces.joined(separator: "\nsleep 0.1\n") + "\nexec cat <&3 >/dev/null")
        let helper = AudioHelper(helperPath: path, bounds: Bounds([.helperAnswer: .seconds(60)]))
        addTeardownBlock { await helper.shutdown() }
        let reply = await helper.ask(.ping)
        guard case .outcome(.index(7)) = reply else { return XCTFail("\(reply)") }
    }

    /// A helper that sends what the protocol does not have is stopped (its socket closed, so it
    /// exits) and replaced; the request waiting on it is lost, saying so.
    func testAHelperThatBreaksTheProtocolIsStoppedAndReplaced() async throws {
        let (path, started) = try standIn("head -c 5 <&3 >/dev/null\nprintf 'Z\\000\\000\\000\\000' >&3\nexec cat <&3 >/dev/null")
        let helper = AudioHelper(helperPath: path)
        addTeardownBlock { await helper.shutdown() }
        let reply = await helper.ask(.ping)
        guard case .lost(let why) = reply else { return XCTFail("\(reply)") }
        XCTAssertEqual(why, "the audio helper was stopped: it broke the protocol (a message 90)")
        try await waitUntil("a replacement to start") { self.pids(started).count == 2 }
    }

    /// Shutting down fails the calls waiting and returns once the helper has ended (it exits when
    /// its socket closes); calls after it fail at once.
    func testShutdownFailsWhatWaitsAndReturnsOnceTheHelperEnded() async throws {
        // Notes that a request came in `asked`, beside itself.
        let (path, started) = try standIn("head -c 5 <&3 >/dev/null\ntouch \"$(dirname \"$0\")/asked\"\nexec cat <&3 >/dev/null")
        let asked = (path as NSString).deletingLastPathComponent + "/asked"
        let helper = AudioHelper(helperPath: path)
        let waiting = Task { await helper.ask(.ping) }
        try await waitUntil("the request to reach the helper") { FileManager.default.fileExists(atPath: asked) }
        await helper.shutdown()
        XCTAssertNotEqual(kill(pids(started)[0], 0), 0, "the helper is gone")
        let reply = await waiting.value
        guard case .lost("the service is stopping") = reply else { return XCTFail("\(reply)") }
        let after = await helper.ask(.ping)
        guard case .unreachable("the service is stopping") = after else { return XCTFail("\(after)") }
    }

    /// `bytes` as printf(1) octal escapes.
    static func octal(_ bytes: [UInt8]) -> String {
        bytes.map { String(format: "\\%03o", $0) }.joined()
    }
}
