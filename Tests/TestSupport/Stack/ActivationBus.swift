import Foundation
import Glibc

/// A private session bus that knows the shipped activation files (dbus/*.service, their `@bindir@`
/// pointed at this build, as scripts/install does), and nothing of ours running on it: the first
/// call to a name in them starts voiceboxd. `stop()` ends the bus and removes its directory.
final class ActivationBus {
    let address: String
    private let directory: URL
    private let daemon: Subprocess

    init(stack: Stack, activating names: [String]) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-activation-\(UUID().uuidString.prefix(8))")
        let services = directory.appendingPathComponent("services")
        try FileManager.default.createDirectory(at: services, withIntermediateDirectories: true)
        for name in names {
            let template = try String(contentsOf: Checkout.root.appendingPathComponent("dbus/" + name), encoding: .utf8)
            try template.replacingOccurrences(of: "@bindir@", with: stack.binDirectory)
                .write(to: services.appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        let socket = directory.appendingPathComponent("bus").path
        let config = directory.appendingPathComponent("bus.conf")
        try """
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
            """.write(to: config, atomically: true, encoding: .utf8)
        // The activated voiceboxd inherits the daemon's environment, SPEECHD_ADDRESS included.
        daemon = try Subprocess("/usr/bin/dbus-daemon", ["--config-file=\(config.path)", "--nofork"])
        address = "unix:path=\(socket)"
        do {
            try await waitUntil("the bus socket") { FileManager.default.fileExists(atPath: socket) }
        } catch {
            stop()
            throw error
        }
    }

    func stop() {
        daemon.signal(SIGTERM)
        try? FileManager.default.removeItem(at: directory)
    }
}
