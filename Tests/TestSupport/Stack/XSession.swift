import Foundation
import Glibc
import XCTest

/// A private X server (Xvfb) with one real X client, a terminal (xterm as it comes, or VTE's
/// lxterminal) that writes every byte it receives to a file, focused: what `voicebox insert` and
/// `dictate` type or paste arrives there.
final class XSession: Sendable {
    enum Terminal { case xterm, lxterminal }

    let display: String
    let output: String
    private let server: Subprocess
    private let terminal: Subprocess

    static func require() throws {
        for program in ["Xvfb", "xterm", "xdotool", "xclip", "xdpyinfo", "setxkbmap"] {
            try XCTSkipUnless(programPath(program) != nil, "\(program) is not installed (scripts/deps installs it)")
        }
    }

    static func programPath(_ program: String) -> String? {
        for directory in ["/usr/bin", "/bin", "/usr/local/bin"] where access("\(directory)/\(program)", X_OK) == 0 {
            return "\(directory)/\(program)"
        }
        return nil
    }

    /// `keymap`: an XKB layout for setxkbmap (nil: Xvfb's US layout). A failure half-way stops
    /// what was started (the Subprocesses end with their owner).
    init(in directory: URL, keymap: String? = nil, terminal kind: Terminal = .xterm) async throws {
        // A display number nobody uses: neither a lock file nor a socket.
        var number = 90 + Int(getpid() % 300)
        while FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock")
                || FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") {
            number += 1
        }
        display = ":\(number)"
        server = try Subprocess(Self.programPath("Xvfb")!, [display, "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                                stdoutFD: Self.devNull, stderrFD: Self.devNull)
        let display = display
        try await waitUntil("Xvfb \(display) to answer", timeout: .seconds(15)) {
            FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)")
                && (try? runProgram(["xdpyinfo", "-display", display], seconds: 10).status) == 0
        }
        if let keymap {
            let result = try runProgram(["setxkbmap", "-display", display, keymap], seconds: 10)
            guard result.status == 0 else { throw ProgramError(description: "setxkbmap \(keymap) failed") }
        }
        output = directory.appendingPathComponent("received.txt").path
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        // Raw, no echo: each byte as typed reaches cat at once. The terminal as it comes: xterm pastes
        // PRIMARY with Shift+Insert, and Ctrl+V is its "next key literally".
        let shell = ["/bin/sh", "-c", "stty raw -echo; exec cat >> \"$0\"", output]
        switch kind {
        case .xterm:
            terminal = try Subprocess(Self.programPath("xterm")!, ["-u8", "-e"] + shell, environment: Self.environment(display),
                                      stdoutFD: Self.devNull, stderrFD: Self.devNull)
        case .lxterminal:
            terminal = try Subprocess(Self.programPath("lxterminal")!, ["--no-remote", "-e", shell.map { "'\($0)'" }.joined(separator: " ")],
                                      environment: Self.environment(display), stdoutFD: Self.devNull, stderrFD: Self.devNull)
        }
        // Its window, then the keyboard focus on it (no window manager: xdotool sets the focus).
        let search = kind == .xterm ? ["--pid", "\(terminal.pid)"] : ["--onlyvisible", "--class", "lxterminal"]
        let window = try runProgram(["env", "DISPLAY=\(display)", "xdotool", "search", "--sync"] + search, seconds: 15).output
            .split(whereSeparator: \.isNewline).first.map(String.init)
        guard let window else { throw ProgramError(description: "xterm's window did not appear") }
        // A window just mapped may not take the focus yet (BadMatch on a loaded machine): a few tries.
        var focused = false
        for _ in 0..<20 where !focused {
            focused = try runProgram(["env", "DISPLAY=\(display)", "xdotool", "windowfocus", "--sync", window], seconds: 10).status == 0
            if !focused { try await Task.sleep(for: .milliseconds(200)) }
        }
        guard focused else { throw ProgramError(description: "xdotool windowfocus failed") }
        // The shell has made the terminal raw once stty has run: a moment for it.
        try await Task.sleep(for: .milliseconds(300))
    }

    private static let devNull = open("/dev/null", O_WRONLY)
    /// /dev/null for the output of programs the tests start.
    static var devNullForTests: Int32 { devNull }

    /// This process's environment on this display: X11 only, a UTF-8 locale.
    static func environment(_ display: String, path: String? = nil) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DISPLAY"] = display
        environment["LC_ALL"] = "C.UTF-8"
        for name in ["WAYLAND_DISPLAY", "XDG_SESSION_TYPE", "XDG_CURRENT_DESKTOP"] { environment[name] = nil }
        if let path { environment["PATH"] = path }
        return environment
    }

    var environment: [String: String] { Self.environment(display) }

    var received: String {
        String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self)
    }

    func waitFor(_ text: String, timeout: Duration = .seconds(15)) async throws {
        do {
            try await waitUntil("the window to receive \(text.debugDescription)", timeout: timeout) { self.received == text }
        } catch {
            XCTFail("\(error); it received \(received.debugDescription)")
        }
    }

    func clipboard(_ selection: String = "clipboard") throws -> String {
        try runProgram(["env", "DISPLAY=\(display)", "xclip", "-selection", selection, "-o"], seconds: 10).output
    }

    /// Owns the selection with `text` (xclip forks and stays in the background until the server goes).
    func setClipboard(_ text: String, selection: String = "clipboard") async throws {
        let file = output + ".\(selection)"
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let xclip = try Subprocess(Self.programPath("xclip")!, ["-selection", selection, "-i", file],
                                   environment: environment, stdoutFD: Self.devNull, stderrFD: Self.devNull)
        let status = await xclip.wait(timeout: .seconds(10))
        guard status == 0 else { throw ProgramError(description: "xclip -i failed: \(String(describing: status))") }
    }

    /// Closes the terminal window (as a user would, mid-typing).
    func closeTerminal() async {
        terminal.signal(SIGKILL)
        _ = await terminal.wait(timeout: .seconds(5))
    }

    func stop() async {
        terminal.signal(SIGTERM)
        _ = await terminal.wait(timeout: .seconds(5))
        server.signal(SIGTERM)
        _ = await server.wait(timeout: .seconds(5))
    }
}

extension XCTestCase {
    /// A private X session with a focused terminal, stopped when the test ends (skips where Xvfb is missing).
    func xSession(keymap: String? = nil, terminal: XSession.Terminal = .xterm) async throws -> (Stack, XSession) {
        let stack = try Stack.require()
        try XSession.require()
        if terminal == .lxterminal {
            try XCTSkipUnless(XSession.programPath("lxterminal") != nil, "lxterminal is not installed (scripts/deps installs it)")
        }
        let x = try await XSession(in: try makeTemporaryDirectory(self), keymap: keymap, terminal: terminal)
        addTeardownBlock { await x.stop() }
        return (stack, x)
    }

    /// `voicebox ARGUMENTS` run to its end (30 s at most), with its status and output.
    func runClient(_ stack: Stack, _ arguments: [String], environment: [String: String]) async throws -> (Int32?, ClientRun) {
        let client = try ClientRun(stack, arguments, environment: environment)
        return (await client.finish(timeout: .seconds(30)), client)
    }
}
