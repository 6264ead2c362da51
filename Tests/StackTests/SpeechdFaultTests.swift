import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import VoiceboxSpawn
import XCTest

/// speech-dispatcher killed or frozen mid-utterance under voiceboxd, against the real stack: what
/// the caller sees (a signal or a named error, within a stated bound) and that the service recovers
/// by itself. What speech-dispatcher does is the same on every sound server, so this is the stack
/// tier's (FaultTests has the sound server's faults).
final class SpeechdFaultTests: XCTestCase {
    /// Killed mid-utterance: the utterance ends with SpeechFinished "error", Speak answers
    /// EngineUnavailable while it is gone, and once it is back the next Speak works.
    func testSpeechDispatcherKilledMidUtterance() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack)
        _ = try await service.speak("ready")
        let id = try await service.speak(Texts.long)
        try await waitUntil("the utterance to start", timeout: .seconds(30)) { service.events(of: id).contains("SpeechStarted") }

        speechd.kill()
        let reason = try await service.waitForFinish(id, timeout: .seconds(30))
        XCTAssertEqual(reason, "error")
        let meanwhile = await service.errorName("Speak", [.string("x"), .vardict([:])])
        XCTAssertEqual(meanwhile, "org.voicebox.Error.EngineUnavailable")

        // Speak tries to connect at once when the last attempt is stale; else the backoff does.
        try await speechd.start()
        let again = try await speakWhenBack(service, timeout: .seconds(30))
        let end = try await service.waitForFinish(again, timeout: .seconds(30))
        XCTAssertEqual(end, "done")
    }

    /// Frozen (SIGSTOP) mid-utterance, nobody calling: the heartbeat's query goes unanswered and the
    /// utterance ends ("error"), so a `wait` caller and paused others are not held for ever. Here
    /// the heartbeat beats every 0.3 s (`speechd-heartbeat`) and the watchdog is given a minute, so
    /// that it is the heartbeat that finds out, as the log says; its query has the standard 2 s.
    func testSpeechDispatcherStoppedMidUtteranceEndsItWithoutAnyCall() async throws {
        let stack = try Stack.require()
        let log = LogFile()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack, ["--bound", "speechd-heartbeat=0.3", "--bound", "speechd-begin=60"],
                                                                    stderrFD: log.descriptor)
        _ = try await service.speak("ready")
        let id = try await service.speak(Texts.long + Texts.long, ["others": .string("pause")])
        try await waitUntil("the utterance to start", timeout: .seconds(30)) { service.events(of: id).contains("SpeechStarted") }
        speechd.freeze()
        let reason = try await service.waitForFinish(id, timeout: .seconds(30))
        XCTAssertEqual(reason, "error")
        XCTAssertTrue(log.text.contains("speech: speech-dispatcher did not answer GET VOLUME within 2 s; recovering"), log.text)
        _ = try await service.waitForInterruption("ended", timeout: .seconds(30))
        speechd.thaw()
        _ = try await speakWhenBack(service, timeout: .seconds(30))
    }

    /// Frozen (SIGSTOP) mid-utterance: the next Speak is answered (queued), the utterance in flight
    /// ends ("error"), voiceboxd restarts speech-dispatcher and the queued Speak is spoken; nothing
    /// waits for a SIGCONT. The watchdog's bound is small (0.3 s), so it is the first to find out.
    func testSpeechDispatcherStoppedMidUtterance() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack, ["--bound", "speechd-begin=0.3"])
        _ = try await service.speak("ready")
        let id = try await service.speak(Texts.long)
        try await waitUntil("the utterance to start", timeout: .seconds(30)) { service.events(of: id).contains("SpeechStarted") }
        let stopped = try XCTUnwrap(speechd.pid)

        speechd.freeze()
        let next = try await service.speak("Spoken by the restarted server.")
        let reason = try await service.waitForFinish(id, timeout: .seconds(30))
        XCTAssertEqual(reason, "error")
        let end = try await service.waitForFinish(next, timeout: .seconds(30))
        XCTAssertEqual(end, "done")
        XCTAssertEqual(service.events(of: next), ["SpeechStarted", "SpeechFinished:done"])
        XCTAssertNotEqual(speechd.pid, stopped, "speech-dispatcher was not restarted")
        XCTAssertFalse(ForeignProcess.isRunning(stopped), "the stopped server was left behind")
    }
}
