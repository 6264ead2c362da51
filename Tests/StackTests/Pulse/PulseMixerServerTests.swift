import Foundation
@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import VoiceboxPulse
import XCTest

/// The mixer's connection: server info, a server that dies and comes back, one that is not
/// there or never answers, idle cost and shutdown.
final class PulseMixerServerTests: XCTestCase {
    func testServerInfoWithoutRoleCork() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        let mixer = try PulseMixer(server: server.address)
        let info = try await mixer.serverInfo()
        print("METRIC server: \(info.name) \(info.version)")
        XCTAssertEqual(info.name, "pulseaudio")
        XCTAssertFalse(info.version.isEmpty)
        XCTAssertFalse(info.isPipeWire)
        XCTAssertEqual(info.roleCorkTriggers, [])
        XCTAssertEqual(info.roleCorkTargets, [])
        XCTAssertFalse(info.hasRoleCork)
    }

    func testKilledAndRestartedServerIsLostThenReadyAgain() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        // Requests bounded by a minute: the trigger's stop below must not wait for its bound.
        let mixer = try PulseMixer(server: server.address, requestTimeout: .seconds(60))
        let recorder = await MixerEventRecorder.start(mixer.events)
        let connected = await recorder.first { $0 == .serverReady }
        XCTAssertNotNil(connected)

        // A trigger playing when the server dies ends with the connection: stopping it does not wait.
        _ = try await mixer.startCorkTrigger(role: "phone")
        let killed = ContinuousClock.now
        server.server.kill()
        let lost = await recorder.first { if case .serverLost = $0 { true } else { false } }
        XCTAssertNotNil(lost, "no serverLost")
        print("METRIC serverLost \(milliseconds((lost?.at ?? killed) - killed)) ms after SIGKILL: \(lost?.event ?? .serverReady)")
        let stopped = await outcome(within: .seconds(10)) { await mixer.stopCorkTrigger() }
        XCTAssertNotNil(stopped, "stopping a trigger whose server died waited")
        do {
            _ = try await mixer.playbackStreams()
            XCTFail("listed streams of a dead server")
        } catch MixerError.unavailable(let reason) {
            print("METRIC while the server is away: unavailable(\(reason))")
        }

        let mark = await recorder.count
        try server.server.start()
        let restarted = ContinuousClock.now
        let ready = await recorder.first(after: mark, within: .seconds(15)) { $0 == .serverReady }
        XCTAssertNotNil(ready, "no serverReady after the restart")
        print("METRIC serverReady \(milliseconds((ready?.at ?? restarted) - restarted)) ms after the server was back "
              + "(\(milliseconds(restarted - killed)) ms after the kill)")
        let lostEvents = await recorder.events.filter { if case .serverLost = $0 { true } else { false } }
        XCTAssertEqual(lostEvents.count, 1, "one serverLost per outage, not one per retry")

        let player = try server.play(role: "music")
        let listed = await waitUntil(.seconds(10)) { (try? await mixer.playbackStreams().contains { $0.processID == player.pid }) == true }
        XCTAssertTrue(listed, "the restarted server's stream is not listed")
        let event = await recorder.first(after: mark) { $0.playback?.processID == player.pid }
        XCTAssertNotNil(event, "no events after the restart")
        let info = try await mixer.serverInfo()
        XCTAssertEqual(info.name, "pulseaudio")
    }

    /// While the server is known to be away, a call fails at once (not after connectTimeout, a
    /// minute here), and the retries say nothing more.
    func testMissingServerIsUnavailableAtOnceAndReportedLost() async throws {
        let mixer = try PulseMixer(server: "unix:/tmp/voicebox-no-such-dir/native", connectTimeout: .seconds(60))
        let recorder = await MixerEventRecorder.start(mixer.events)
        let lost = await recorder.first { if case .serverLost = $0 { true } else { false } }
        XCTAssertNotNil(lost)
        switch await outcome(within: .seconds(10), { try await mixer.serverInfo() }) {
        case nil: XCTFail("a call waited for the connect bound while the server is known to be away")
        case .success: XCTFail("server info from no server")
        case .failure(let error): guard case MixerError.unavailable = error else { return XCTFail("\(error)") }
        }
        // Retries at 0.25, 0.75 and 1.75 s fail too, and say nothing more.
        try await Task.sleep(for: .seconds(2))
        let events = await recorder.events
        XCTAssertEqual(events.count, 1, "\(events)")
        mixer.shutdown()
        let finished = await waitUntil(.seconds(10)) { await recorder.finished }
        XCTAssertTrue(finished, "events did not finish at shutdown")
    }

    func testServerThatNeverAnswersGivesUnavailableWithinTheBound() async throws {
        let directory = "/tmp/vbmixer-silent-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var name = sockaddr_un()
        name.sun_family = sa_family_t(AF_UNIX)
        let path = Array("\(directory)/native".utf8CString)
        withUnsafeMutableBytes(of: &name.sun_path) { $0.copyBytes(from: path.map { UInt8(bitPattern: $0) }) }
        let bound = withUnsafePointer(to: &name) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(listen(listener, 8), 0)  // The kernel completes connections; nobody reads.

        let mixer = try PulseMixer(server: "unix:\(directory)/native", connectTimeout: .milliseconds(500))
        switch await outcome(within: .seconds(30), { try await mixer.playbackStreams() }) {
        case nil: XCTFail("the call did not end at the connect bound")
        case .success: XCTFail("listed streams of a server that never answers")
        case .failure(let error):
            guard case MixerError.unavailable(let reason) = error else { return XCTFail("\(error)") }
            XCTAssert(reason.contains("within"), "the reason names the bound: \(reason)")
        }
        mixer.shutdown()
    }

    func testIdleMixerUsesNoCPUAndShutdownEndsItsThread() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        let mixer = try PulseMixer(server: server.address)
        let recorder = await MixerEventRecorder.start(mixer.events)
        let ready = await recorder.first { $0 == .serverReady }
        XCTAssertNotNil(ready)
        _ = try await mixer.playbackStreams()
        XCTAssertEqual(threads(named: "voicebox-mixer").count, 1)
        try await Task.sleep(for: .milliseconds(300))  // the answer's work done
        let (process, thread) = (cpuTicks(), cpuTicks(thread: "voicebox-mixer"))
        try await Task.sleep(for: .seconds(2))  // the idle window whose CPU ticks are counted
        let used = (process: cpuTicks() - process, thread: cpuTicks(thread: "voicebox-mixer") - thread)
        print("METRIC idle 2 s: whole test process \(used.process) ticks, mixer thread \(used.thread) ticks")
        XCTAssertEqual(used.thread, 0, "the mixer's thread works while idle")
        XCTAssertLessThan(used.process, 20, "something spins while idle")  // a busy thread would use ~200

        mixer.shutdown()
        let gone = await waitUntil(.seconds(10)) { threads(named: "voicebox-mixer").isEmpty }
        XCTAssertTrue(gone, "the mixer thread outlived shutdown")
        let finished = await waitUntil(.seconds(10)) { await recorder.finished }
        XCTAssertTrue(finished, "events did not finish at shutdown")
        do {
            _ = try await mixer.playbackStreams()
            XCTFail("listed streams after shutdown")
        } catch MixerError.unavailable {}
    }

    func testDroppedMixerEndsItsThread() async throws {
        let server = try stopsAtEnd(MixerTestServer())
        var mixer: PulseMixer? = try PulseMixer(server: server.address)
        _ = try await mixer?.serverInfo()
        XCTAssertEqual(threads(named: "voicebox-mixer").count, 1)
        mixer = nil
        let gone = await waitUntil(.seconds(10)) { threads(named: "voicebox-mixer").isEmpty }
        XCTAssertTrue(gone, "the mixer thread outlived the mixer")
    }
}
