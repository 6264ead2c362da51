import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import XCTest
@testable import VoiceboxSpeechd

/// Callers never wait on each other, and what a caller takes (a pause) is released when it
/// leaves: against the real stack. The tests share one voiceboxd.
// What the sound server decides here: speech plays, pauses and stops on the sink
final class CallerIndependenceTests: ServiceTestCase {
    override class var sharesService: Bool { true }

    /// A pause belongs to its caller: leaving the bus releases it, and speech another caller is
    /// waiting for goes on.
    func testAPausingCallerThatLeavesReleasesItsPause() async throws {
        let service = self.service!
        let pauser = try BusConnection(address: stack.busAddress)
        try await Speech1.proxy(pauser).call(Speech1.pauseSpeaking)
        let paused = try await service.proxy.get(Speech1.paused)
        XCTAssertTrue(paused)

        let waiting = Task { try await service.proxy.call(Speech1.speak, "after the pause", VarDict(["wait": .boolean(true)]),
                                                          timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(800))  // a window in which speech not held would start
        XCTAssertFalse(service.signals.contains { $0.member == "SpeechStarted" }, "paused speech must not start")
        await pauser.close()
        let id = try await waiting.value
        XCTAssertEqual(service.events(of: id).last, "SpeechFinished:done")
        let pausedAfter = try await service.proxy.get(Speech1.paused)
        XCTAssertFalse(pausedAfter)
    }

    /// Speech stays held until every caller that paused it has resumed; a resume from a caller
    /// that holds no pause changes nothing.
    func testSpeechResumesOnlyWhenEveryHolderHasResumed() async throws {
        let first = try BusConnection(address: stack.busAddress), second = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await first.close(); await second.close() }
        try await Speech1.proxy(first).call(Speech1.pauseSpeaking)
        try await Speech1.proxy(second).call(Speech1.pauseSpeaking)
        let id = try await service.speak("held until both resume")
        try await service.proxy.call(Speech1.resumeSpeaking)  // holds no pause: nothing changes
        try await Speech1.proxy(first).call(Speech1.resumeSpeaking)
        try await Task.sleep(for: .milliseconds(800))  // a window in which speech not held would start
        XCTAssertEqual(service.events(of: id), [], "still held by the second caller")
        let paused = try await service.proxy.get(Speech1.paused)
        XCTAssertTrue(paused)
        try await Speech1.proxy(second).call(Speech1.resumeSpeaking)
        let end = try await service.waitForFinish(id)
        XCTAssertEqual(end, "done")
        let pausedAfter = try await service.proxy.get(Speech1.paused)
        XCTAssertFalse(pausedAfter)
    }

    /// `voicebox stop --all` silences speech that another process queued, on the sink.
    func testStopAllSpeakingSilencesAnotherProcesssSpeech() async throws {
        let ears = try stopsAtEnd(MonitorRecorder(device: stack.sink + ".monitor"))
        try await ears.waitUntilRecording()
        // The tests share speech-dispatcher and voiceboxd: what the test before stopped may still drain.
        try await waitUntil("the sink to be silent", timeout: .seconds(30)) { ears.seconds > 0.3 && ears.rms(from: ears.seconds - 0.3) < 50 }
        let position = ears.seconds
        let speaker = try Subprocess("/usr/bin/busctl", ["--user", "call", Speech1.busName, Speech1.objectPath, Speech1.interfaceName,
                                                         "Speak", "sa{sv}", Texts.long, "0"])
        _ = await speaker.wait()
        try await waitUntil("the other process's speech to be heard") { ears.firstLoud(after: position) != nil }
        let id = try XCTUnwrap(service.signals.first { $0.member == "SpeechStarted" }?.arguments.first?.uint64)
        let stopper = try Subprocess(stack.clientPath, ["stop", "--all"])
        let status = await stopper.wait()
        XCTAssertEqual(status, 0)
        let stoppedAt = ears.offset(of: .now)
        let end = try await service.waitForFinish(id, timeout: .seconds(30))
        XCTAssertEqual(end, "cancelled")
        // The contract (docs/api.md): silent within 0.5 s of the answer; asserted with 3 times slack.
        try await waitUntil("2.5 s recorded after the stop", timeout: .seconds(30)) { ears.seconds >= stoppedAt + 2.5 }
        XCTAssertLessThan(ears.rms(from: stoppedAt + 1.5, to: stoppedAt + 2.5), 50, "stopped speech must be silent")
    }
}

/// Callers are never held up by a frozen speech-dispatcher. A class of its own: its voiceboxd runs
/// on a speech-dispatcher of its own, with bounds of its own.
// What the sound server decides here: speech plays on the sink
final class FrozenSpeechDispatcherTests: XCTestCase {
    /// speech-dispatcher frozen with SIGSTOP, as a wedged server looks, under a voiceboxd told not to
    /// restart it (`--speechd-recovery reconnect`) and to give it a minute for every answer (the
    /// watchdog and heartbeat as long). The Speak that met the freeze is answered (queued); while its
    /// utterance waits in the frozen server, forty calls of another caller are answered, none held up
    /// by it (one that waited for the server would still be waiting when its D-Bus call gave up, after
    /// 30 s), and nothing is given up meanwhile. Once the server continues the waiting utterance is
    /// spoken. With the standard bounds, how soon the frozen server fails it and how fast the others
    /// are answered is SpeechdContractTests' (SpeedTests).
    func testAFrozenSpeechDispatcherHoldsUpNoOtherCaller() async throws {
        let stack = try Stack.require()
        let patient = ["--speechd-recovery", "reconnect", "--bound", "speechd-reply=60", "--bound", "speechd-begin=60",
                       "--bound", "speechd-heartbeat=60"]
        let (speechd, ownService) = try await serviceOnItsOwnSpeechd(stack, patient)
        _ = try await ownService.speak("ready")  // its first connection is made before it answers
        _ = try await ownService.proxy.call(Speech1.listVoices, "en")  // warm the cache
        let other = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await other.close() }
        let otherProxy = Speech1.proxy(other)
        let queued = try await otherProxy.call(Speech1.speak, Texts.long, VarDict())

        speechd.freeze()
        let stuck = try await bounded(30, "Speak to a frozen speech-dispatcher") {
            try await ownService.proxy.call(Speech1.speak, "Spoken once speech-dispatcher continues.", VarDict())
        }
        let calls: [@Sendable () async throws -> Void] = [
            { () async throws in try await otherProxy.call(Speech1.stopSpeaking, 0) },
            { () async throws in _ = try await otherProxy.call(Speech1.listVoices, "en") },
            { () async throws in _ = try await otherProxy.get(Speech1.speaking) },
            { () async throws in try await otherProxy.call(Speech1.cancelRecognition) },
        ]
        for _ in 0..<10 {
            for call in calls { try await call() }
        }
        XCTAssertTrue(SpeechdServerProcess.isStopped(try XCTUnwrap(speechd.pid)), "speech-dispatcher is still frozen")
        XCTAssertEqual(ownService.events(of: stuck), [], "nothing was given up meanwhile")
        // Stopping never waits for the server: the other caller's StopSpeaking 0 ended its own utterance.
        let end = try await ownService.waitForFinish(queued, timeout: .seconds(30))
        XCTAssertEqual(end, "cancelled")

        speechd.thaw()
        let stuckEnd = try await ownService.waitForFinish(stuck, timeout: .seconds(30))
        XCTAssertEqual(stuckEnd, "done")
        let again = try await ownService.speak("back again")
        let spoken = try await ownService.waitForFinish(again, timeout: .seconds(30))
        XCTAssertEqual(spoken, "done")
    }
}
