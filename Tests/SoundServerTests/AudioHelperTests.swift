import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import VoiceboxSpawn
import XCTest

/// The sound server is reached through one `voicebox-audio` helper (AudioHelperProtocol): voiceboxd
/// links no libpulse. Its streams are the service's (they carry voiceboxd's pid); a helper that
/// dies ends only its recording, is replaced at once, and leaves no other stream changed once the
/// interruption it was part of ends; it never outlives the service.
///
/// The bounds these tests wait for are set small (`Bound`, `voiceboxd --bound`): a helper that does
/// not answer is killed after 2 s (helper-answer, 8 s as standard), a recording's helper is pinged
/// every 0.5 s (helper-ping, 2 s), and replacements that keep dying wait 0.05 s doubling to 1 s
/// (helper-restart-*, 0.1 s to 5 s). What is asserted is what follows and in which order; that a
/// stopped helper is noticed within the standard bounds is SpeedTests' (AudioHelperBoundTests).
final class AudioHelperTests: XCTestCase {
    static let answerBound = ["--bound", "helper-answer=2"]
    static let pingBound = ["--bound", "helper-ping=0.5"]
    static let restartBounds = ["--bound", "helper-restart-first=0.05", "--bound", "helper-restart-limit=1"]
    /// A give-up, not a speed: a fresh voiceboxd's first microphone recognition starts a decoder
    /// worker and loads its model, which took over 10 s under ThreadSanitizer on a loaded machine.
    static let microphoneOpens: Duration = .seconds(30)

    private func helper(of service: ServiceHarness, besides old: pid_t? = nil) async throws -> pid_t {
        var found: pid_t?
        // Generous: not an assertion of speed (a replacement comes within helper-answer and a pause).
        try await waitUntil("voiceboxd's audio helper", timeout: .seconds(30)) {
            found = ServiceProcesses.audioHelpers(of: service.daemon.pid).first { $0 != old && ServiceProcesses.running($0) }
            return found != nil
        }
        return found!
    }

    /// SIGSEGV, abort and SIGKILL in the helper while the microphone is heard: that Recognize fails
    /// with NoMicrophone naming the signal, the server no longer records for us, voiceboxd lives on,
    /// a new helper runs, and the next microphone Recognize hears what is played. While it listens,
    /// its recording carries voiceboxd's pid (so that the audio session knows it for its own).
    // What the sound server decides here: the microphone, as the server sees it
    func testAHelperThatDiesMidMicrophoneFailsOnlyThatRecognition() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await startService(on: stack)
        let directory = try makeTemporaryDirectory(self)
        let numbers = try Recordings.wav("numbers.raw", in: directory)
        let goforward = try Recordings.wav("goforward.raw", in: directory)
        let pid = service.daemon.pid
        var helper = try await helper(of: service)
        for signal in [SIGSEGV, SIGABRT, SIGKILL] {
            let name = Termination.name(of: signal)
            let failing = Task { await service.recognitionError(["max_seconds": .double(20)]) }
            try await service.waitForListening(true, timeout: Self.microphoneOpens)
            XCTAssertNotNil(try ServerStream.recording(of: pid), "our recording carries voiceboxd's pid")
            let player = try stopsAtEnd(Player(numbers, sink: stack.micSink))
            // Killed while the microphone hears the recording (the max_seconds of 20 would end it
            // without an error: the error is the helper's death).
            try await waitUntil("the recording to play into the microphone") { (try? ServerStream.playback(of: player.process.pid)) != nil }
            kill(helper, signal)
            let error = await failing.value
            player.stop()
            XCTAssertEqual(error?.name, "org.voicebox.Error.NoMicrophone", "\(name): \(error?.message ?? "no error")")
            XCTAssert(error?.message.contains(name) == true, "the error names \(name): \(error?.message ?? "")")
            XCTAssertNil(service.daemon.poll(), "voiceboxd must not die with its audio helper")
            try await waitUntil("the server to stop recording for us") {
                (try? ServerStream.recording(of: pid)) == nil
            }
            try await service.waitForListening(false)
            helper = try await self.helper(of: service, besides: helper)

            let next = Task { try await service.recognize([:]) }
            try await service.waitForListening(true, timeout: Self.microphoneOpens)
            let speech = try stopsAtEnd(Player(goforward, sink: stack.micSink))
            let heard = try await next.value
            await speech.waitUntilDone()
            XCTAssertEqual(heard.text, "go forward ten meters", "after \(name)")
        }
    }

    /// The helper killed while others are silenced for speech: the silenced stream plays again once
    /// the speech ends, as the server shows it, and the interruption ends once; the new helper
    /// serves the next one.
    // What the sound server decides here: mutes and corks other audio and checks what the server shows
    func testAHelperKilledMidInterruptionLeavesNoStreamChanged() async throws {
        let stack = try Stack.require()
        let service = try await startService(on: stack)
        let browser = try PlayingStream(sink: stack.sink, role: nil)
        let music = try PlayingStream(sink: stack.sink, role: "music")
        addTeardownBlock { await browser.stop(); await music.stop() }
        _ = try await browser.waitUntilListed()
        _ = try await music.waitUntilListed()
        let helper = try await helper(of: service)
        let id = try await service.speak(Texts.long, ["others": .string("pause")])
        try await waitUntil("AudioInterruption began") { service.signals.contains { $0.member == "AudioInterruption" } }
        XCTAssertEqual(browser.state?.muted, true)
        kill(helper, SIGKILL)
        _ = try await self.helper(of: service, besides: helper)
        let finished = try await service.waitForFinish(id, timeout: .seconds(30))
        XCTAssertEqual(finished, "done")
        try await waitUntil("both streams to play again") {
            guard let browser = browser.state, let music = music.state else { return false }
            return !browser.muted && !music.muted && !music.corked
        }
        // "ended" is announced once the streams are given back, so it may follow what the server shows.
        let states = { service.signals.filter { $0.member == "AudioInterruption" }.map { $0.arguments.first?.string ?? "" } }
        try await waitUntil("AudioInterruption ended") { states().contains("ended") }
        XCTAssertEqual(states(), ["began", "ended"])

        let next = try await service.speak("Again.", ["others": .string("pause")])
        try await waitUntil("the next interruption to mute the browser") { browser.state?.muted == true }
        let nextFinished = try await service.waitForFinish(next)
        XCTAssertEqual(nextFinished, "done")
        try await waitUntil("the browser to play again") { browser.state?.muted == false }
    }

    /// A stopped helper (SIGSTOP: it sends no samples and answers nothing) mid-microphone: the
    /// heartbeat finds it (helper-ping twice, here 0.5 s), the Recognize fails with NoMicrophone
    /// instead of listening until its max_seconds of 20, the stopped helper is killed, the server
    /// stops recording for us, and the next Recognize hears.
    // What the sound server decides here: the microphone, as the server sees it
    func testAStoppedHelperEndsItsRecognitionInsteadOfListeningForEver() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await startService(on: stack, extraArguments: Self.pingBound)
        let directory = try makeTemporaryDirectory(self)
        let goforward = try Recordings.wav("goforward.raw", in: directory)
        let pid = service.daemon.pid
        let helper = try await helper(of: service)
        let failing = Task { await service.recognitionError(["max_seconds": .double(20)]) }
        try await service.waitForListening(true, timeout: Self.microphoneOpens)
        kill(helper, SIGSTOP)
        let error = await failing.value
        XCTAssertEqual(error?.name, "org.voicebox.Error.NoMicrophone", error?.message ?? "no error")
        try await waitUntil("the server to stop recording for us") {
            (try? ServerStream.recording(of: pid)) == nil
        }
        XCTAssertFalse(ServiceProcesses.running(helper), "the stopped helper was killed")
        _ = try await self.helper(of: service, besides: helper)
        let next = Task { try await service.recognize([:]) }
        try await service.waitForListening(true, timeout: Self.microphoneOpens)
        let speech = try stopsAtEnd(Player(goforward, sink: stack.micSink))
        let heard = try await next.value
        await speech.waitUntilDone()
        XCTAssertEqual(heard.text, "go forward ten meters")
    }

    /// A helper stopped while others are silenced, then the speech stopped: the restore goes to a
    /// helper that answers nothing, which is killed after helper-answer (here 2 s), and the restore
    /// is asked again of its replacement. Every stream comes back as the user left it: unmuted
    /// (pause) or at its volume (duck); then the interruption ends.
    // What the sound server decides here: mutes and ducks other audio and checks what the server shows
    func testAStoppedHelperAtTheEndOfAnInterruptionStillGivesEveryStreamBack() async throws {
        let stack = try Stack.require()
        let service = try await startService(on: stack, extraArguments: Self.answerBound)
        for others in ["pause", "duck"] {
            let first = try PlayingStream(sink: stack.sink, role: nil)
            let second = try PlayingStream(sink: stack.sink, role: nil)
            addTeardownBlock { await first.stop(); await second.stop() }
            let before = [try await first.settledState(), try await second.settledState()]
            let helper = try await helper(of: service)
            let began = service.signals.filter { $0.member == "AudioInterruption" }.count
            _ = try await service.speak(Texts.long, ["others": .string(others)])
            try await waitUntil("both streams to be silenced (\(others))") {
                [first.state, second.state].allSatisfy { state in
                    guard let state else { return false }
                    return others == "pause" ? state.muted : state.volume != before[0].volume
                }
            }
            XCTAssertEqual(service.signals.filter { $0.member == "AudioInterruption" }.count, began + 1)
            kill(helper, SIGSTOP)
            _ = try await service.call("StopAllSpeaking")
            try await waitUntil("both streams back as they were (\(others))", timeout: .seconds(30)) {
                guard let one = first.state, let two = second.state else { return false }
                return !one.muted && !two.muted && one.volume == before[0].volume && two.volume == before[1].volume
            }
            try await waitUntil("the interruption to end") {
                service.signals.filter { $0.member == "AudioInterruption" }.count == began + 2
            }
            XCTAssertFalse(ServiceProcesses.running(helper), "the stopped helper was killed")
            await first.stop()
            await second.stop()
        }
    }

    /// The helper killed seven times in a row, each replacement as soon as it appears (the pause
    /// before the next grows to helper-restart-limit, here 1 s), then the speech stopped: the
    /// restore, asked for while no helper runs (its 0.3 s grace is within the pause), waits for the
    /// next one, and every stream plays again. A stream the user turned down while the helper was
    /// stopped at the end of a ducking keeps the user's level, even when the stopped helper's first
    /// replacement dies too.
    // What the sound server decides here: mutes and ducks other audio and checks what the server shows
    func testRepeatedHelperDeathsAndAUsersChangeAreAllHonouredAtTheEnd() async throws {
        let stack = try Stack.require()
        let service = try await startService(on: stack, extraArguments: Self.answerBound + Self.restartBounds)
        let interruptions = { service.signals.filter { $0.member == "AudioInterruption" }.map { $0.arguments.first?.string ?? "" } }
        let first = try PlayingStream(sink: stack.sink, role: nil)
        let second = try PlayingStream(sink: stack.sink, role: nil)
        addTeardownBlock { await first.stop(); await second.stop() }
        let before = [try await first.settledState(), try await second.settledState()]
        var helper = try await helper(of: service)
        _ = try await service.speak(Texts.long + " " + Texts.long, ["others": .string("pause")])
        try await waitUntil("both streams muted") { first.state?.muted == true && second.state?.muted == true }
        for _ in 0..<7 {
            kill(helper, SIGKILL)
            helper = try await self.helper(of: service, besides: helper)
        }
        kill(helper, SIGKILL)
        _ = try await service.call("StopAllSpeaking")
        try await waitUntil("both streams unmuted after seven deaths", timeout: .seconds(30)) {
            first.state?.muted == false && second.state?.muted == false
        }
        try await waitUntil("the interruption to end") { interruptions() == ["began", "ended"] }

        // Ducking; the helper stopped; the user turns the first stream down meanwhile.
        helper = try await self.helper(of: service, besides: helper)
        _ = try await service.speak(Texts.long, ["others": .string("duck")])
        try await waitUntil("both streams ducked") {
            first.state?.volume != before[0].volume && second.state?.volume != before[1].volume
        }
        kill(helper, SIGSTOP)
        let users: UInt32 = 20_000
        _ = try ServerStream.run("/usr/bin/pactl", ["set-sink-input-volume", "\(before[0].index)", "\(users)"])
        _ = try await service.call("StopAllSpeaking")
        // The stopped helper is replaced after helper-answer; the first replacement dies at once too.
        let replacement = try await self.helper(of: service, besides: helper)
        kill(replacement, SIGKILL)
        try await waitUntil("the second stream back at its level", timeout: .seconds(30)) {
            second.state?.volume == before[1].volume
        }
        // `ended` goes out once everything is given back: nothing changes the first stream after it.
        try await waitUntil("the second interruption to end") { interruptions() == ["began", "ended", "began", "ended"] }
        XCTAssertEqual(first.state?.volume, [users, users], "the user's level is the user's")
    }

    /// No helper outlives voiceboxd killed with SIGKILL, and the server drops its recording.
    // What the sound server decides here: the recording, as the server sees it
    func testNoHelperOutlivesTheService() async throws {
        let stack = try Stack.require()
        let service = try await startService(on: stack)
        let helper = try await helper(of: service)
        let pid = service.daemon.pid
        let listening = Task { await service.recognitionError(["max_seconds": .double(20)]) }
        try await service.waitForListening(true, timeout: Self.microphoneOpens)
        XCTAssertNotNil(try ServerStream.recording(of: pid))
        service.daemon.signal(SIGKILL)
        _ = await service.daemon.wait()
        _ = await listening.value
        try await waitUntil("the audio helper to end") { !ServiceProcesses.running(helper) }
        try await waitUntil("the server to drop the recording") {
            (try? ServerStream.recording(of: pid)) == nil
        }
    }

    /// The helper's own ends, with no voiceboxd: started on a socket pair as voiceboxd starts it, it
    /// records as asked; a service that then reads nothing (stuck) makes it end once its samples
    /// have waited AudioHelperProtocol.writeBound, and a service that closes its end makes it end at
    /// once. Either way the sound server no longer records for it.
    func testAHelperWhoseServiceStopsReadingOrLeavesEndsAndLeavesNoRecording() async throws {
        let stack = try Stack.require()
        for service in ["stops reading", "closes its end"] {
            var ends: [Int32] = [-1, -1]
            XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &ends), 0)
            var spec = ChildSpec(stack.binDirectory + "/" + AudioHelperProtocol.executableName, ["--parent", String(getpid())],
                                 environment: ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" })
            spec.descriptors[3] = ends[1]
            let helper = try Spawn.start(spec).child
            close(ends[1])
            addTeardownBlock { helper.signal(SIGKILL); close(ends[0]) }
            let request = AudioHelperProtocol.Request(id: 1, call: .openCapture(capture: 1, source: nil))
            let frame = AudioHelperProtocol.frame(.request, json: request)
            XCTAssertEqual(frame.withUnsafeBytes { write(ends[0], $0.baseAddress, $0.count) }, frame.count)
            try await waitUntil("the helper to record (\(service))", timeout: .seconds(30)) {
                (try? ServerStream.recording(of: helper.pid)) != nil
            }
            if service == "closes its end" { shutdown(ends[0], Int32(SHUT_RDWR)) }
            // Stuck: its samples (32 KB/s) fill the socket's buffers within seconds, then wait writeBound.
            try await waitUntil("the helper to end (\(service))", timeout: .seconds(60)) { helper.termination != nil }
            XCTAssertEqual(helper.termination?.shellStatus, 0, "the helper ends quietly when its service \(service)")
            try await waitUntil("the server to drop its recording (\(service))") {
                (try? ServerStream.recording(of: helper.pid)) == nil
            }
        }
    }
}
