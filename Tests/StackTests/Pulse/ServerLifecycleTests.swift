import Foundation
@testable import TestSupport
import VoiceboxContract
import VoiceboxCore
import VoiceboxPulse
import XCTest

/// With a private PulseAudio that the test may kill and restart.
final class ServerLifecycleTests: XCTestCase {
    /// A sine-wave source as the default source: audible and steadily clocked, no player needed.
    private static let sineMicrophone = [
        "load-module module-sine-source source_name=voicebox_sine rate=16000 frequency=440",
        "set-default-source voicebox_sine",
    ]

    func testServerDeathEndsTheStreamAndARestartedServerIsFoundAgain() async throws {
        _ = try sharedServerEnvironment()  // same prerequisite as the others: a test machine with PulseAudio
        let server = try stopsAtEnd(PrivatePulseServer(modules: Self.sineMicrophone))
        try server.start()
        let capture = PulseCapture(server: server.address, mediaName: "test server death")

        let first = try await capture.open(source: nil)
        let recorder = await ChunkRecorder.start(first.chunks)
        let heard = await waitUntil(.seconds(10)) { await recorder.count >= 5 }
        XCTAssertTrue(heard, "no audio from the sine source")
        let firstLevel = rms(await recorder.samples)
        XCTAssertGreaterThan(firstLevel, 1000)

        let killed = ContinuousClock.now
        server.kill()
        let ended = await waitUntil(.seconds(10)) { await recorder.finished }
        print("METRIC chunks finished \(ContinuousClock.now - killed) after SIGKILL of the server")
        XCTAssertTrue(ended, "the chunk stream did not finish when the server died")
        let failure = await first.failure
        guard case .serverUnavailable(let reason) = failure else {
            return XCTFail("failure is \(String(describing: failure))")
        }
        print("METRIC failure after server death: \(reason)")
        await first.close()  // harmless after the end

        do {
            _ = try await capture.open(source: nil)
            XCTFail("opened a capture while the server is down")
        } catch CaptureError.serverUnavailable {}

        try server.start()
        let second = try await capture.open(source: nil)
        let again = await ChunkRecorder.start(second.chunks)
        let heardAgain = await waitUntil(.seconds(10)) { await again.count >= 5 }
        await second.close()
        XCTAssertTrue(heardAgain, "no audio after the server restarted")
        let secondLevel = rms(await again.samples)
        XCTAssertGreaterThan(secondLevel, 1000)
    }

    func testServerWithoutAnySourceIsNoMicrophone() async throws {
        _ = try sharedServerEnvironment()
        let server = try stopsAtEnd(PrivatePulseServer(modules: []))
        try server.start()
        do {
            _ = try await PulseCapture(server: server.address).open(source: nil)
            XCTFail("opened a capture on a server without sources")
        } catch let error as CaptureError {
            guard case .noMicrophone(let reason) = error else { return XCTFail("\(error)") }
            print("METRIC no source at all: \(reason)")
        }
    }

    func testRemovedNamedSourceEndsTheStreamWithNoMicrophone() async throws {
        _ = try sharedServerEnvironment()
        let server = try stopsAtEnd(PrivatePulseServer(modules: ["load-module module-sine-source source_name=voicebox_usb rate=16000"]))
        try server.start()
        let capture = try await PulseCapture(server: server.address).open(source: "voicebox_usb")
        let recorder = await ChunkRecorder.start(capture.chunks)
        _ = await waitUntil(.seconds(10)) { await recorder.count > 0 }
        // Unplugging: a stream on a named source is not moved elsewhere but ended.
        let unload = try runCommand(["pactl", "-s", server.address, "unload-module", "module-sine-source"], seconds: 10)
        XCTAssertEqual(unload.status, 0)
        let ended = await waitUntil(.seconds(10)) { await recorder.finished }
        XCTAssertTrue(ended, "the chunk stream did not finish when its source went away")
        let failure = await capture.failure
        guard case .noMicrophone(let reason) = failure else { return XCTFail("failure is \(String(describing: failure))") }
        print("METRIC source removed: \(reason)")
        await capture.close()
    }
}
