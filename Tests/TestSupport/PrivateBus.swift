import Foundation
import Glibc

/// A dbus-daemon of the test's own, on a socket in a fresh directory, stopped at the end.
final class PrivateBus {
    let address: String
    private let process: Subprocess
    private let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-bus-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        defer { close(fds[0]) }
        process = try Subprocess("/usr/bin/dbus-daemon", ["--session", "--nofork", "--print-address=\(fds[1])",
                                                          "--address=unix:path=\(directory.path)/bus"],
                                 keeping: [fds[1]])
        // The child got its own copy of the pipe's write end as the same number; ours must close so
        // that reading can end.
        close(fds[1])
        // The daemon prints its address once it listens.
        var line = [UInt8]()
        var byte: UInt8 = 0
        while read(fds[0], &byte, 1) == 1, byte != UInt8(ascii: "\n") { line.append(byte) }
        address = String(decoding: line, as: UTF8.self)
        guard !address.isEmpty else { throw POSIXError(.ECONNREFUSED) }
    }

    deinit {
        process.signal(SIGTERM)
        try? FileManager.default.removeItem(at: directory)
    }
}
