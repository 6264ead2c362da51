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
        let root = Checkout.root
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-activation-\(UUID().uuidString.prefix(8))")
        let services = directory.appendingPathComponent("services")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }

        // What scripts/install does with the template: point Exec= at the binary.
        let template = try String(contentsOf: root.appendingPathComponent("dbus/org.voicebox.Speech1.service"), encoding: .utf8)
        let activation = template.replacingOccurrences(of: "@bindir@", with: stack.binDirectory)
        try activation.write(to: services.appendingPathComponent("org.voicebox.Speech1.service"), atomically: true, encoding: .utf8)
        let socket = directory.appendingPathComponent("bus").path
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>unix:path=\(socket)</listen>
              <servicedir>\(services.path)</servicedir>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        let configFile = directory.appendingPathComponent("bus.conf")
        try config.write(to: configFile, atomically: true, encoding: .utf8)
        // The activated voiceboxd inherits the daemon's environment, SPEECHD_ADDRESS included.
        let daemon = try Subprocess("/usr/bin/dbus-daemon", ["--config-file=\(configFile.path)", "--nofork"])
        defer { daemon.signal(SIGTERM) }
        try await waitUntil("the bus socket") { FileManager.default.fileExists(atPath: socket) }

        let client = try BusConnection(address: "unix:path=\(socket)")
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
