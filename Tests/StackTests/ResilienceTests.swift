import Foundation
import Glibc
import VoiceboxBus
@testable import TestSupport
import XCTest

/// Staying up: speech-dispatcher late or dying, the name already taken, clean signals.
final class ResilienceTests: XCTestCase {
    /// A ListVoices made before speech-dispatcher runs is answered once it appears: its arrival starts
    /// a listing at once. The voice list's own retries are a minute apart here (`voices-retry-first`),
    /// longer than the call may wait (`voices-wait=30`), so only that can answer it; voiceboxd
    /// looks for the server every 0.2 s (`speechd-reconnect-limit`).
    func testListVoicesAnswersOnceSpeechDispatcherAppears() async throws {
        let stack = try Stack.require()
        let speechd = try await ownSpeechd(stack, start: false)
        let service = try await startService(on: stack, speechdAddress: speechd.address,
                                             extraArguments: ["--bound", "voices-wait=30", "--bound", "voices-retry-first=60",
                                                              "--bound", "speechd-reconnect-limit=0.2"])

        let early = await service.errorName("Speak", [.string("nobody hears this"), .vardict([:])])
        XCTAssertEqual(early, "org.voicebox.Error.EngineUnavailable")

        // Asked now; speech-dispatcher takes a second or more to come up.
        async let listing = service.call("ListVoices", [.string("en")], timeout: .seconds(40))
        try await speechd.start()
        let voices = try await listing.first?.arrayElements ?? []
        XCTAssertFalse(voices.isEmpty, "the voices must arrive once speech-dispatcher is up")

        try await waitUntil("speaking to work", timeout: .seconds(20)) {
            (try? await service.speak("now it works")) != nil
        }
    }

    func testSpeechDispatcherDyingAndComingBack() async throws {
        let stack = try Stack.require()
        let (speechd, service) = try await serviceOnItsOwnSpeechd(stack)
        _ = try await service.speak("ready")
        // The voices listed first: taking in 13,000 voices is work (a core for a second under the
        // thread sanitizer) that must not fall into the measurement below.
        _ = try await service.call("ListVoices", [.string("")], timeout: .seconds(40))

        let id = try await service.speak(Texts.long)
        try await waitUntil("the utterance to start") { service.events(of: id).contains("SpeechStarted") }
        speechd.kill()
        let reason = try await service.waitForFinish(id, timeout: .seconds(10))
        XCTAssertEqual(reason, "error", "an utterance in flight ends with an error when the engine dies")

        try await waitUntil("Speak to answer EngineUnavailable") {
            await service.errorName("Speak", [.string("x"), .vardict([:])]) == "org.voicebox.Error.EngineUnavailable"
        }
        // The service is still there and still answers.
        let version = try await service.property("Version")
        XCTAssertNotNil(version?.string)
        // Reconnecting must not spin while the engine is gone (a spinning thread would use the 2 s whole).
        let cpu = try cpuSeconds(of: service.daemon.pid)
        try await Task.sleep(for: .seconds(2))  // the window CPU is counted over
        XCTAssertLessThan(try cpuSeconds(of: service.daemon.pid) - cpu, 0.1, "reconnecting must not busy-loop")

        try await speechd.start()
        var again: UInt64 = 0
        try await waitUntil("speaking to work again", timeout: .seconds(20)) {
            again = (try? await service.speak("back again")) ?? 0
            return again != 0
        }
        let end = try await service.waitForFinish(again)
        XCTAssertEqual(end, "done")
    }

    /// speech-dispatcher listening on a socket its configuration moved: voiceboxd finds it through
    /// $SPEECHD_ADDRESS, as every speech-dispatcher client does, and speaks there.
    func testSpeechDispatcherOnAConfiguredSocketIsFoundThroughSPEECHD_ADDRESS() async throws {
        let stack = try Stack.require()
        let speechd = try await ownSpeechd(stack)
        XCTAssertNotEqual(speechd.address, stack.speechdAddress)
        let service = try await startService(on: stack, addressFromEnvironment: true,
                                             environment: ["SPEECHD_ADDRESS": speechd.address])
        let id = try await service.speak("found it")
        let end = try await service.waitForFinish(id)
        XCTAssertEqual(end, "done")
        // It really is the private server: once that one dies, the utterance cannot be spoken.
        speechd.kill()
        try await waitUntil("Speak to answer EngineUnavailable") {
            await service.errorName("Speak", [.string("x"), .vardict([:])]) == "org.voicebox.Error.EngineUnavailable"
        }
    }

    func testSecondInstanceExitsWithAClearMessageAndTheFirstKeepsServing() async throws {
        let stack = try Stack.require()
        let service = try await startService(on: stack)
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let second = try Subprocess(stack.daemonPath, ["--no-autospawn", "--speechd-address", stack.speechdAddress], stdoutFD: fds[1])
        close(fds[1])
        let status = await second.wait(timeout: .seconds(10))
        close(fds[0])
        XCTAssertNotNil(status)
        XCTAssertNotEqual(status, 0)
        let version = try await service.property("Version")
        XCTAssertNotNil(version)
        await service.stop()
    }

    func testSIGTERMExitsCleanlyAndReleasesTheName() async throws {
        let stack = try Stack.require()
        let service = try await startService(on: stack)
        service.daemon.signal(SIGTERM)
        let status = await service.daemon.wait(timeout: .seconds(10))
        XCTAssertEqual(status, 0)
        let owned = try await service.client.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                  interface: "org.freedesktop.DBus", member: "NameHasOwner",
                                                  arguments: [.string(ServiceHarness.name)])
        XCTAssertEqual(owned.first?.bool, false)
        await service.client.close()
    }

    /// A TERM sent the moment the name appears (as when an activated service is stopped by its first
    /// caller) once fell into the gap before the handler was ready and was lost, 1 run in 20.
    func testSIGTERMTheMomentTheNameAppearsIsNeverLost() async throws {
        let stack = try Stack.require()
        let watcher = try BusConnection(address: stack.busAddress)
        let target = Shared<pid_t>(0)
        // Sent from the bus thread as the NameOwnerChanged signal arrives: no polling delay.
        _ = try await watcher.subscribe(SignalFilter(sender: "org.freedesktop.DBus", member: "NameOwnerChanged")) { signal in
            guard signal.arguments.first?.string == ServiceHarness.name, signal.arguments.last?.string?.isEmpty == false else { return }
            let pid = target.withLock { $0 }
            if pid > 0 { kill(pid, SIGTERM) }
        }
        for round in 1...25 {
            let daemon: Subprocess
            do {
                daemon = try Subprocess(stack.daemonPath, ["--no-autospawn", "--speechd-address", stack.speechdAddress])
            } catch {
                await watcher.close()
                throw error
            }
            target.withLock { $0 = daemon.pid }
            let status = await daemon.wait(timeout: .seconds(10))
            target.withLock { $0 = 0 }  // never a later process that got the pid
            XCTAssertEqual(status, 0, "round \(round): voiceboxd did not exit cleanly on TERM")
            if status != 0 { daemon.signal(SIGKILL); break }
        }
        await watcher.close()
    }

    /// TERM during start-up (here as soon as voiceboxd runs a second thread, which it starts after
    /// blocking TERM and long before it takes the name) is handled once start-up can stop: a clean
    /// exit, not death by the default action.
    func testSIGTERMDuringStartUpExitsCleanly() async throws {
        let stack = try Stack.require()
        for round in 1...5 {
            let daemon = try Subprocess(stack.daemonPath, ["--no-autospawn", "--speechd-address", stack.speechdAddress])
            try await waitUntil("voiceboxd to start a thread", timeout: .seconds(10)) {
                threadCount(daemon.pid) > 1 || daemon.poll() != nil
            }
            daemon.signal(SIGTERM)
            let status = await daemon.wait(timeout: .seconds(10))
            XCTAssertEqual(status, 0, "round \(round)")
            if status != 0 { daemon.signal(SIGKILL); break }
        }
    }

    func testIdleServiceUsesNoCPU() async throws {
        // The memory trim after 0.1 s of quiet on the bus, so that the second below is 10 times it.
        let stack = try Stack.require()
        let service = try await startService(on: stack, extraArguments: ["--bound", "memory-trim=0.1"])
        // Let start-up finish first: the voice listing, the provider's probes and spare modules
        // (which come after the listing, later on a loaded machine), and the memory trim after.
        try await service.waitUntilSettled()
        try await Task.sleep(for: .seconds(1))
        let before = try cpuSeconds(of: service.daemon.pid)
        try await Task.sleep(for: .seconds(3))
        let used = try cpuSeconds(of: service.daemon.pid) - before
        XCTAssertLessThanOrEqual(used, 0.02, "idle voiceboxd used \(used) s of CPU in 3 s")
    }

    /// At rest the service keeps only its audio helper: the decoder workers of a recognition and
    /// the spare output modules of start-up are let go (issue 38's family at rest). Their standard
    /// bounds, 15 s each, made 1 s here; the next recognition loads its model again and hears.
    func testAServiceAtRestKeepsOnlyItsAudioHelper() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let service = try await startService(on: stack, extraArguments: ["--bound", "model-idle=1", "--bound", "module-spare-unused=1"])
        let pid = service.daemon.pid
        try await service.waitForProvider()
        let spoken = try await service.speak("At rest.")
        _ = try await service.waitForFinish(spoken)
        let heard = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(heard.text, "go forward ten meters")
        XCTAssertFalse(ServiceProcesses.decoderWorkers(of: pid).isEmpty, "a decoder worker stays warm after the recognition")
        try await waitUntil("only the audio helper to be left", timeout: .seconds(20)) {
            Self.childNames(of: pid) == ["voicebox-audio"]
        }
        // Stays so: nothing comes back by itself.
        try await Task.sleep(for: .seconds(2))
        XCTAssertEqual(Self.childNames(of: pid), ["voicebox-audio"])
        let again = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
        XCTAssertEqual(again.text, "go forward ten meters", "a model loaded again hears as the first did")
    }

    /// The names (/proc/PID/comm) of `pid`'s children, sorted.
    static func childNames(of pid: pid_t) -> [String] {
        ServiceProcesses.children(of: pid).compactMap(ServiceProcesses.name(of:)).sorted()
    }
}

/// User + system CPU time of a process, from /proc.
func cpuSeconds(of pid: pid_t) throws -> Double {
    let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    // Fields after the ")" that closes the command name; utime and stime are the 12th and 13th.
    let fields = stat[stat.range(of: ")")!.upperBound...].split(separator: " ")
    let ticks = Double(fields[11])! + Double(fields[12])!
    return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// How many threads `pid` runs (0 when it is gone).
func threadCount(_ pid: pid_t) -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task"))?.count ?? 0
}
