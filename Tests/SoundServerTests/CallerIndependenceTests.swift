import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxInterface
import XCTest

/// Callers never wait on each other, and what a caller takes (a pause) is released when it
/// leaves: against the real stack.
// @SoundServer: speech plays, pauses and stops on the sink
final class CallerIndependenceTests: XCTestCase {
    /// speech-dispatcher frozen with SIGSTOP, as a wedged server looks, and voiceboxd told not to
    /// restart it (`--speechd-recovery reconnect`; restarting is SpeechSafetyTests'): the Speak that
    /// met the freeze is answered within the 2 s timeout and its utterance ends with error naming
    /// it, every other caller is answered at once meanwhile, and after SIGCONT the service speaks
    /// again by itself.
    func testAHungSpeechDispatcherFailsSpeakInTimeAndHoldsUpNoOtherCaller() async throws {
        let stack = try Stack.require()
        let speechd = try PrivateSpeechd(config: stack.speechdConfig)
        addTeardownBlock { speechd.stopEverything() }  // registered first: runs after the service stops
        try await speechd.start()
        let service = try await ServiceHarness(stack: stack, speechdAddress: speechd.address,
                                               extraArguments: ["--speechd-recovery", "reconnect"])
        addTeardownBlock { speechd.thaw(); await service.stop() }
        try await waitUntil("speaking to work", timeout: .seconds(20)) { (try? await service.speak("ready")) != nil }
        _ = try await service.proxy.call(Speech1.listVoices, "en")  // warm the cache
        let other = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await other.close() }
        let otherProxy = Speech1.proxy(other)
        let queued = try await otherProxy.call(Speech1.speak, Texts.long, VarDict())

        speechd.freeze()
        let started = ContinuousClock.now
        let stuck = Task { () -> (UInt64?, String) in
            do {
                return (try await service.proxy.call(Speech1.speak, "nobody hears this", VarDict()), "")
            } catch let error as DBusError {
                return (nil, error.name + ": " + error.message)
            } catch {
                return (nil, "\(error)")
            }
        }
        try await Task.sleep(for: .milliseconds(300))
        var latencies: [Duration] = []
        for _ in 0..<10 {
            let calls: [@Sendable () async throws -> Void] = [
                { () async throws in try await otherProxy.call(Speech1.stopSpeaking, 0) },
                { () async throws in _ = try await otherProxy.call(Speech1.listVoices, "en") },
                { () async throws in _ = try await otherProxy.get(Speech1.speaking) },
                { () async throws in try await otherProxy.call(Speech1.cancelRecognition) },
            ]
            for call in calls {
                let begin = ContinuousClock.now
                try await call()
                latencies.append(ContinuousClock.now - begin)
            }
        }
        let (id, problem) = await stuck.value
        let answeredAfter = ContinuousClock.now - started
        XCTAssertLessThan(answeredAfter, .milliseconds(2800))
        let stuckID = try XCTUnwrap(id, problem)
        let stuckEnd = try await service.waitForFinish(stuckID, timeout: .seconds(5))
        XCTAssertEqual(stuckEnd, "error")
        // A call held up by the stuck one would take its 2 s; on a loaded machine (CI's two cores)
        // a free one can take tens of ms now and then.
        let sorted = latencies.sorted()
        XCTAssertLessThan(sorted[sorted.count / 2], .milliseconds(50), "other callers' calls while one is stuck: \(latencies)")
        XCTAssertLessThan(sorted.last ?? .zero, .milliseconds(500), "other callers' calls while one is stuck: \(latencies)")
        // The utterance queued before the freeze ends (cancelled by StopSpeaking 0, or error with the link).
        let end = try await service.waitForFinish(queued, timeout: .seconds(5))
        XCTAssertTrue(["cancelled", "error"].contains(end), end)

        speechd.thaw()
        var again: UInt64 = 0
        try await waitUntil("speaking to work again", timeout: .seconds(20)) {
            again = (try? await service.speak("back again")) ?? 0
            return again != 0
        }
        let spoken = try await service.waitForFinish(again)
        XCTAssertEqual(spoken, "done")
    }

    /// A pause belongs to its caller: leaving the bus releases it, and speech another caller is
    /// waiting for goes on.
    func testAPausingCallerThatLeavesReleasesItsPause() async throws {
        let (stack, service) = try await startService()
        let pauser = try BusConnection(address: stack.busAddress)
        try await Speech1.proxy(pauser).call(Speech1.pauseSpeaking)
        let paused = try await service.proxy.get(Speech1.paused)
        XCTAssertTrue(paused)

        let waiting = Task { try await service.proxy.call(Speech1.speak, "after the pause", VarDict(["wait": .boolean(true)]),
                                                          timeout: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(800))
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
        let (stack, service) = try await startService()
        let first = try BusConnection(address: stack.busAddress), second = try BusConnection(address: stack.busAddress)
        addTeardownBlock { await first.close(); await second.close() }
        try await Speech1.proxy(first).call(Speech1.pauseSpeaking)
        try await Speech1.proxy(second).call(Speech1.pauseSpeaking)
        let id = try await service.speak("held until both resume")
        try await service.proxy.call(Speech1.resumeSpeaking)  // holds no pause: nothing changes
        try await Speech1.proxy(first).call(Speech1.resumeSpeaking)
        try await Task.sleep(for: .milliseconds(800))
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
        let (stack, service) = try await startService()
        let ears = try MonitorRecorder(device: stack.sink + ".monitor")
        try await ears.waitUntilRecording()
        let speaker = try Subprocess("/usr/bin/busctl", ["--user", "call", Speech1.busName, Speech1.objectPath, Speech1.interfaceName,
                                                         "Speak", "sa{sv}", Texts.long, "0"])
        _ = await speaker.wait()
        try await waitUntil("the other process's speech to be heard") { ears.firstLoud() != nil }
        let id = try XCTUnwrap(service.signals.first { $0.member == "SpeechStarted" }?.arguments.first?.uint64)
        let stopper = try Subprocess(stack.clientPath, ["stop", "--all"])
        let status = await stopper.wait()
        XCTAssertEqual(status, 0)
        let stoppedAt = ears.offset(of: .now)
        let end = try await service.waitForFinish(id, timeout: .seconds(5))
        XCTAssertEqual(end, "cancelled")
        try await Task.sleep(for: .milliseconds(1500))
        XCTAssertLessThan(ears.rms(from: stoppedAt + 0.5, to: stoppedAt + 1.5), 50, "stopped speech must be silent")
    }
}
