import Foundation
import Glibc
@testable import TestSupport
import VoiceboxContract
import VoiceboxSpawn
import VoiceboxBus
import XCTest

/// Faults from outside, each against the real stack: what the caller sees (a named error or a
/// signal, within a stated bound), that the service recovers by itself (a later call works, the
/// same voiceboxd), and how long that takes (METRIC lines; bench/faults measures the same).
/// Other tests cover parts: ResilienceTests (speech-dispatcher killed, late), CallerIndependenceTests
/// (frozen), RecognitionTests (a caller leaving, PulseAudio restarted), AudioSessionTests
/// (voiceboxd killed mid-interruption).
final class FaultTests: XCTestCase {
    // MARK: The sound server (PulseAudio, or pipewire-pulse under VOICEBOX_SOUND_SERVER=pipewire)

    /// Restarted mid-recognition: Recognize fails with NoMicrophone, and once the server is back
    /// the next Recognize works, the same voiceboxd.
    // What the sound server decides here: a sound server restarted
    func testSoundServerRestartedMidRecognition() async throws {
        let shared = try Stack.require()
        let own = try await PrivateStack(shared: shared)
        addTeardownBlock { await own.down() }
        let service = try await startService(on: own.stack, speechdAddress: own.stack.speechdAddress, environment: own.environment)
        let before = try await service.recognize(["max_seconds": .double(0.5)])
        XCTAssertEqual(before.reason, "max_duration")

        async let during = service.recognitionError(["max_seconds": .double(20)])
        _ = try await service.waitForNewRecognition(besides: [before.id])
        let crashed = ContinuousClock.now
        let restart = Task { try await own.restartSoundServer() }
        let lost = await during
        XCTAssertEqual(lost?.name, "org.voicebox.Error.NoMicrophone", lost?.message ?? "no error")
        _ = faultMetric("sound server killed → Recognize fails", since: crashed)
        try await restart.value
        let back = ContinuousClock.now
        var after: Recognized?
        try await waitUntil("Recognize to work again", timeout: .seconds(30)) {
            after = try? await service.recognize(["max_seconds": .double(0.5)])
            return after != nil
        }
        XCTAssertEqual(after?.reason, "max_duration")
        _ = faultMetric("sound server back → Recognize works (includes its 0.5 s)", since: back)
        try await service.waitForListening(false)
    }

    /// Restarted while speech has others paused: speech-dispatcher (0.11) dies with its audio,
    /// the utterance ends ("error"), the interruption ends (AudioInterruption ended), nothing is
    /// left silenced on the new server, and voiceboxd starts speech-dispatcher again (as it does on
    /// a desktop) for the next Speak, which interrupts and restores others as before.
    // What the sound server decides here: a sound server restarted
    func testSoundServerRestartedMidInterruption() async throws {
        let shared = try Stack.require()
        let own = try await PrivateStack(shared: shared)
        addTeardownBlock { await own.down() }
        // The socket libspeechd autospawns at, with the stack's configuration (scripts/stack links it).
        var environment = own.environment
        environment["SPEECHD_ADDRESS"] = "unix_socket:\(own.runtimeDirectory)/speech-dispatcher/speechd.sock"
        let service = try await startService(on: own.stack, addressFromEnvironment: true, autospawn: true, environment: environment)
        // "ready" ducks others (Speak's default): let that interruption end first.
        let ready = try await service.speak("ready")
        _ = try await service.waitForFinish(ready)
        try await waitUntil("the first interruption to end") { (try? await service.proxy.get(Speech1.interrupted)) == false }
        func count(_ state: String) -> Int { service.interruptions.filter { $0.state == state }.count }
        let (began, ended) = (count("began"), count("ended"))
        let music = try stopsAtEnd(OtherAudio(sink: shared.sink, role: "music", environment: own.environment))
        try await music.waitUntilListed()
        let id = try await service.speak(Texts.long, ["others": .string("pause")])
        _ = try await service.waitForInterruption("began", count: began + 1)
        try await waitUntil("the music to be silenced") { music.silenced == true }

        let crashed = ContinuousClock.now
        let restart = Task { try await own.restartSoundServer() }
        let reason = try await service.waitForFinish(id, timeout: .seconds(30))
        XCTAssertEqual(reason, "error")
        _ = faultMetric("sound server killed mid-interruption → SpeechFinished", since: crashed)
        _ = try await service.waitForInterruption("ended", count: ended + 1, timeout: .seconds(30))
        _ = faultMetric("sound server killed mid-interruption → AudioInterruption ended", since: crashed)
        try await restart.value
        let back = ContinuousClock.now
        let interrupted = try await service.proxy.get(Speech1.interrupted)
        XCTAssertFalse(interrupted)

        let newMusic = try stopsAtEnd(OtherAudio(sink: shared.sink, role: "music", environment: own.environment))
        try await newMusic.waitUntilListed()
        try await Task.sleep(for: .milliseconds(300))  // a mute, if one came, would be seen by now
        XCTAssertEqual(newMusic.silenced, false, "nothing stays silenced after the restart")
        let again = try await speakWhenBack(service, "back again", options: ["others": .string("pause")], timeout: .seconds(45))
        _ = faultMetric("sound server back → Speak works (speech-dispatcher started again)", since: back)
        _ = try await service.waitForInterruption("began", count: began + 2)
        try await waitUntil("the new music to be silenced") { newMusic.silenced == true }
        let end = try await service.waitForFinish(again)
        XCTAssertEqual(end, "done")
        _ = try await service.waitForInterruption("ended", count: ended + 2)
        try await waitUntil("the new music to play again") { newMusic.silenced == false }
    }

    // MARK: Clients

    /// A client process killed (SIGKILL) mid-recognition: the microphone is released and
    /// RecognitionFinished sent at once; the next Recognize works.
    // What the sound server decides here: the microphone or other audio
    func testClientKilledMidRecognition() async throws {
        let stack = try Stack.require()
        let service = try await startService(on: stack)
        let client = try Subprocess("/usr/bin/busctl", ["--user", "--timeout=60", "call", ServiceHarness.name, ServiceHarness.path,
                                                        ServiceHarness.interface, "Recognize", "a{sv}", "1", "max_seconds", "d", "20"])
        let id = try await service.waitForNewRecognition(besides: [])
        let pid = service.daemon.pid
        try await waitUntil("voiceboxd's recording stream", timeout: .seconds(30)) { (try? ServerStream.recording(of: pid)) != nil }

        let killed = ContinuousClock.now
        client.signal(SIGKILL)
        try await waitUntil("RecognitionFinished") {
            service.recognitionSignals(of: id).last?.member == "RecognitionFinished"
        }
        _ = faultMetric("client killed mid-recognition → RecognitionFinished", since: killed)
        try await waitUntil("the recording stream to go") { (try? ServerStream.recording(of: pid)) == nil }
        _ = faultMetric("client killed mid-recognition → microphone released", since: killed)
        try await service.waitForListening(false)
        let next = try await service.recognize(["max_seconds": .double(0.5)])
        XCTAssertEqual(next.reason, "max_duration")
    }

    /// A client speaking with others=pause (and wait) killed: its utterance is cancelled, the
    /// interruption ends and the other stream plays again.
    // What the sound server decides here: speech
    func testClientKilledWhileItsSpeechPausesOthers() async throws {
        let stack = try Stack.require()
        // Its own speech-dispatcher: after this cancelled utterance, following ClientTests' en-GB
        // one, the shared speech-dispatcher spoke the next client's first utterance so that
        // RecognitionTests' round trip heard "the gotta get" for "close the garage" (restarting
        // speech-dispatcher cured it). A speech-dispatcher matter, kept out of the other tests.
        let (_, service) = try await serviceOnItsOwnSpeechd(stack)
        let ready = try await service.speak("ready")
        _ = try await service.waitForFinish(ready)
        _ = try await service.waitForInterruption("ended")
        let other = try stopsAtEnd(OtherAudio(sink: stack.sink))
        try await other.waitUntilListed()
        let client = try ServiceHarness.speakingClient(Texts.long, others: "pause")
        _ = try await service.waitForInterruption("began", count: 2)
        try await waitUntil("the other stream to be muted") { other.silenced == true }
        let started = { service.signals.first { $0.member == "SpeechStarted" && $0.arguments.first?.uint64 != ready } }
        try await waitUntil("the speech to start") { started() != nil }
        let id = try XCTUnwrap(started()?.arguments.first?.uint64)

        let killed = ContinuousClock.now
        client.signal(SIGKILL)
        // Cancelled, not spoken to its end: Texts.long lasts far longer than these waits' give-up.
        let reason = try await service.waitForFinish(id, timeout: .seconds(10))
        XCTAssertEqual(reason, "cancelled")
        _ = try await service.waitForInterruption("ended", count: 2)
        _ = faultMetric("speaking client killed → AudioInterruption ended", since: killed)
        try await waitUntil("the other stream to play again") { other.silenced == false }
        _ = faultMetric("speaking client killed → others restored", since: killed)
        let next = try await service.speak("next")
        let end = try await service.waitForFinish(next)
        XCTAssertEqual(end, "done")
    }

    /// A client holding a pause (`voicebox pause`) killed while speech with others=pause waits
    /// behind it: the pause is released, the speech is spoken and others are restored after.
    // What the sound server decides here: the microphone or other audio
    func testClientKilledWhileHoldingAPause() async throws {
        let stack = try Stack.require()
        let service = try await startService(on: stack)
        let other = try stopsAtEnd(OtherAudio(sink: stack.sink))
        try await other.waitUntilListed()
        let pauser = try Subprocess(stack.clientPath, ["pause"])
        addTeardownBlock { pauser.signal(SIGKILL) }
        try await waitUntil("speech to be paused") { (try? await service.proxy.get(Speech1.paused)) == true }
        let id = try await service.speak("spoken once the pause is gone", ["others": .string("pause")])
        try await Task.sleep(for: .milliseconds(500))  // it would have started by now, were it not held
        XCTAssertFalse(service.events(of: id).contains("SpeechStarted"), "held by the pause")

        let killed = ContinuousClock.now
        pauser.signal(SIGKILL)
        try await waitUntil("the pause to be released") { (try? await service.proxy.get(Speech1.paused)) == false }
        _ = faultMetric("pausing client killed → Paused false", since: killed)
        let end = try await service.waitForFinish(id)
        XCTAssertEqual(end, "done")
        _ = try await service.waitForInterruption("ended")
        try await waitUntil("the other stream to play again") { other.silenced == false }
        _ = faultMetric("pausing client killed → speech done and others restored", since: killed)
    }

    // MARK: The session bus

    /// The bus dies (its dbus-daemon killed) while speech has others paused and the microphone
    /// is open: voiceboxd exits with status 1, says why in its log, closes the
    /// microphone and restores others on the way out. Coming back is D-Bus activation's (or
    /// systemd's) part: the next caller on a new bus starts a new voiceboxd (ActivationTests).
    // What the sound server decides here: the microphone or other audio
    func testTheBusGoingAwayEndsTheServiceCleanly() async throws {
        let shared = try Stack.require()
        let bus = try await stopsAtEnd(KillableBus())
        let log = LogFile()
        let stack = Stack(busAddress: bus.address, speechdAddress: shared.speechdAddress, sink: shared.sink, micSink: shared.micSink,
                          speechdConfig: shared.speechdConfig, binDirectory: shared.binDirectory)
        let service = try await ServiceHarness(stack: stack, environment: ["DBUS_SESSION_BUS_ADDRESS": bus.address],
                                               stderrFD: log.descriptor)
        // Killed if still there (a failure midway), then stopped as a harness (its speech cancelled).
        addTeardownBlock { service.daemon.signal(SIGKILL); await service.stop() }
        let other = try stopsAtEnd(OtherAudio(sink: shared.sink))
        try await other.waitUntilListed()
        _ = try await service.speak(Texts.long, ["others": .string("pause")])
        _ = try await service.waitForInterruption("began")
        try await waitUntil("the other stream to be muted") { other.silenced == true }
        let listening = Task { try? await service.recognize(["max_seconds": .double(20), "others": .string("mix")]) }
        addTeardownBlock { listening.cancel() }
        let pid = service.daemon.pid
        try await waitUntil("voiceboxd's recording stream", timeout: .seconds(30)) { (try? ServerStream.recording(of: pid)) != nil }

        let killed = ContinuousClock.now
        bus.kill()
        let status = await service.daemon.wait(timeout: .seconds(30))
        XCTAssertEqual(status, 1, "voiceboxd exits with status 1 when the bus goes")
        _ = faultMetric("bus killed → voiceboxd exited", since: killed)
        XCTAssert(log.text.contains("lost the bus"), "the log says why: \(log.text)")
        XCTAssertEqual(other.silenced, false, "others are restored on the way out")
        XCTAssertNil(try ServerStream.recording(of: pid), "the microphone is closed")
    }

    // MARK: $XDG_RUNTIME_DIR full

    /// A full runtime directory: the interruption journal cannot be written, so nothing is muted
    /// (a crash would leave it muted for good: see AudioSession); speech is spoken all the same,
    /// the interruption says it silenced nothing, the log says why, and once there is room again
    /// the next Speak pauses others as usual.
    // What the sound server decides here: speech
    func testAFullRuntimeDirectorySpeaksAndLeavesOthersAlone() async throws {
        let stack = try Stack.require()
        let runtime = "/tmp/vbfull-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let mounted = try await runQuietly("/usr/bin/mount", ["-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", runtime])
        guard mounted == 0 else {
            try? FileManager.default.removeItem(atPath: runtime)
            throw XCTSkip("cannot mount a small tmpfs here (needs root): mount ended with \(mounted.map(String.init) ?? "a timeout")")
        }
        addTeardownBlock {
            _ = try? await runQuietly("/usr/bin/umount", [runtime])
            try? FileManager.default.removeItem(atPath: runtime)
        }
        let filler = runtime + "/filler"
        try await runQuietly("/usr/bin/dd", ["if=/dev/zero", "of=" + filler, "bs=4096"])  // ends with ENOSPC
        let log = LogFile()
        let service = try await startService(on: stack, environment: ["XDG_RUNTIME_DIR": runtime], stderrFD: log.descriptor)
        let other = try stopsAtEnd(OtherAudio(sink: stack.sink))
        try await other.waitUntilListed()

        let id = try await service.speak("the journal cannot be written", ["others": .string("pause")])
        let began = try await service.waitForInterruption("began")
        XCTAssertEqual(began["muted_streams"], .uint32(0))
        XCTAssertEqual(other.silenced, false, "nothing is muted that cannot be journaled")
        let end = try await service.waitForFinish(id)
        XCTAssertEqual(end, "done", "speech is spoken all the same")
        _ = try await service.waitForInterruption("ended")
        XCTAssert(log.text.contains("cannot write the interruption journal"), "the log says why: \(log.text)")

        try FileManager.default.removeItem(atPath: filler)
        let freed = ContinuousClock.now
        let again = try await service.speak(Texts.long, ["others": .string("pause")])
        let second = try await service.waitForInterruption("began", count: 2)
        XCTAssertEqual(second["muted_streams"], .uint32(1))
        try await waitUntil("the other stream to be muted") { other.silenced == true }
        _ = faultMetric("runtime directory freed → others paused again", since: freed)
        XCTAssert(FileManager.default.fileExists(atPath: runtime + "/voicebox/interruption.json"))
        try await service.proxy.call(Speech1.stopSpeaking, again)
        _ = try await service.waitForInterruption("ended", count: 2)
        try await waitUntil("the other stream to play again") { other.silenced == false }
    }
}
