import Foundation
import Glibc
import XCTest

/// A VTE terminal (lxterminal as it comes) in a GNOME session, whose shell writes what it receives
/// to a file: a window that takes IBus's commits but never reports its text.
struct GnomeTerminal {
    let process: Subprocess
    let output: String

    static func require() throws {
        try XCTSkipUnless(XSession.programPath("lxterminal") != nil, "lxterminal is not installed (scripts/deps installs it)")
    }

    /// Starts it and waits until a key pressed arrives (the shell has made the terminal raw); then
    /// what it received is wiped.
    init(in gnome: GnomeSession) async throws {
        output = gnome.root + "/terminal.txt"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        process = try Subprocess("/usr/bin/lxterminal", ["--no-remote", "-e", "/bin/sh -c 'stty raw -echo; exec cat >> \(output)'"],
                                 environment: gnome.windowEnvironment, stdoutFD: XSession.devNullForTests,
                                 stderrFD: XSession.devNullForTests)
        let output = output
        try await waitUntil("the terminal to take keys", timeout: .seconds(30)) {
            try? await gnome.press([0x2E])
            try? await Task.sleep(for: .milliseconds(300))
            return String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self).contains(".")
        }
        truncate(output, 0)
    }

    var received: String { String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self) }

    func stop() async {
        process.signal(SIGKILL)
        _ = await process.wait(timeout: .seconds(5))
    }
}

extension XCTestCase {
    /// A terminal in `gnome`, focused, for this test: at its end the terminal is stopped and the
    /// entry window opened again (it lost the focus). Skips where lxterminal is not installed.
    func openTerminal(in gnome: GnomeSession) async throws -> GnomeTerminal {
        try GnomeTerminal.require()
        let terminal = try await GnomeTerminal(in: gnome)
        addTeardownBlock {
            await terminal.stop()
            try? await gnome.reopenWindow()
        }
        return terminal
    }
}
