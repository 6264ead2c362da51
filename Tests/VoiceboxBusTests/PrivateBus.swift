import Foundation

/// A dbus-daemon of the test's own, on a socket in a fresh directory, killed at the end.
final class PrivateBus {
    let address: String
    private let process: Process
    private let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/dbus-daemon")
        process.arguments = ["--session", "--nofork", "--print-address=1", "--address=unix:path=\(directory.path)/bus"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        // The daemon prints its address once it listens.
        let line = output.fileHandleForReading.availableData
        address = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !address.isEmpty else { throw CocoaError(.fileReadUnknown) }
    }

    deinit {
        // Not Process.waitUntilExit: its run loop can hang inside async tests. The daemon
        // exits on SIGTERM by itself and Foundation reaps it.
        kill(process.processIdentifier, SIGTERM)
        try? FileManager.default.removeItem(at: directory)
    }
}
