import Foundation
import Glibc
import VoiceboxBus
@testable import TestSupport
import XCTest

/// D-Bus activation with the shipped dbus/org.voicebox.Speech1.service: on a bus that knows the
/// file, the first call to org.voicebox.Speech1 starts voiceboxd.
final class ActivationTests: XCTestCase {
    func testFirstCallStartsTheService() async throws {
        let stack = try Stack.require()
        let bus = try await ActivationBus(stack: stack, activating: ["org.voicebox.Speech1.service"])
        addTeardownBlock { bus.stop() }
        let client = try BusConnection(address: bus.address)
        let version = try await client.call(destination: "org.voicebox.Speech1", path: "/org/voicebox/Speech1",
                                            interface: "org.freedesktop.DBus.Properties", member: "Get",
                                            arguments: [.string("org.voicebox.Speech1"), .string("Version")])
        XCTAssertEqual(version.first?.unwrapped.string?.isEmpty, false)
        let owner = try await client.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                          interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID",
                                          arguments: [.string("org.voicebox.Speech1")])
        let pid = try XCTUnwrap(owner.first?.uint32)
        await client.close()
        kill(pid_t(pid), SIGTERM)
        try await waitUntil("the activated voiceboxd to exit") { kill(pid_t(pid), 0) != 0 }
    }
}
