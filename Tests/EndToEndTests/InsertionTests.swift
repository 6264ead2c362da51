import Foundation
import Glibc
import TestSupport
import XCTest

/// A private X server (Xvfb) with one real X client, an xterm whose terminal writes every byte
/// it receives to a file, focused: what `voicebox insert` and `dictate` type or paste arrives there.
final class XSession: Sendable {
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

    /// `keymap`: an XKB layout for setxkbmap (nil: Xvfb's US layout).
    init(in directory: URL, keymap: String? = nil) async throws {
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
                && (try? runProgram(["xdpyinfo", "-display", display], seconds: 5).status) == 0
        }
        if let keymap {
            let result = try runProgram(["setxkbmap", "-display", display, keymap], seconds: 10)
            guard result.status == 0 else { throw ProgramError(description: "setxkbmap \(keymap) failed") }
        }
        output = directory.appendingPathComponent("received.txt").path
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        // Raw, no echo: each byte as typed reaches cat at once. Ctrl+V pastes the CLIPBOARD selection
        // (xterm's own binding pastes PRIMARY with Shift+Insert only).
        terminal = try Subprocess(Self.programPath("xterm")!, [
            "-u8", "-xrm", "XTerm*VT100.translations: #override Ctrl<Key>V: insert-selection(CLIPBOARD)",
            "-e", "/bin/sh", "-c", "stty raw -echo; exec cat >> \"$0\"", output,
        ], environment: Self.environment(display), stdoutFD: Self.devNull, stderrFD: Self.devNull)
        // Its window, then the keyboard focus on it (no window manager: xdotool sets the focus).
        let window = try runProgram(["env", "DISPLAY=\(display)", "xdotool", "search", "--sync", "--pid",
                                     "\(terminal.pid)"], seconds: 15).output
            .split(whereSeparator: \.isNewline).first.map(String.init)
        guard let window else { throw ProgramError(description: "xterm's window did not appear") }
        let focus = try runProgram(["env", "DISPLAY=\(display)", "xdotool", "windowfocus", "--sync", window], seconds: 10)
        guard focus.status == 0 else { throw ProgramError(description: "xdotool windowfocus failed") }
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

    func clipboard() throws -> String {
        try runProgram(["env", "DISPLAY=\(display)", "xclip", "-selection", "clipboard", "-o"], seconds: 5).output
    }

    /// Owns the clipboard with `text` (xclip forks and stays in the background until the server goes).
    func setClipboard(_ text: String) async throws {
        let file = output + ".clip"
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        let xclip = try Subprocess(Self.programPath("xclip")!, ["-selection", "clipboard", "-i", file],
                                   environment: environment, stdoutFD: Self.devNull, stderrFD: Self.devNull)
        let status = await xclip.wait(timeout: .seconds(10))
        guard status == 0 else { throw ProgramError(description: "xclip -i failed: \(String(describing: status))") }
    }

    func stop() async {
        terminal.signal(SIGTERM)
        _ = await terminal.wait(timeout: .seconds(5))
        server.signal(SIGTERM)
        _ = await server.wait(timeout: .seconds(5))
    }
}

/// `voicebox insert` and `dictate --output` into a real X client under Xvfb.
final class InsertionTests: XCTestCase {
    private func session(keymap: String? = nil) async throws -> (Stack, XSession) {
        let stack = try Stack.require()
        try XSession.require()
        let x = try await XSession(in: try makeTemporaryDirectory(self), keymap: keymap)
        addTeardownBlock { await x.stop() }
        return (stack, x)
    }

    private func run(_ stack: Stack, _ arguments: [String], environment: [String: String]) async throws -> (Int32?, ClientRun) {
        let client = try ClientRun(stack, arguments, environment: environment)
        return (await client.finish(timeout: .seconds(30)), client)
    }

    func testInsertTypesIntoTheFocusedWindow() async throws {
        let (stack, x) = try await session()
        let (status, client) = try await run(stack, ["insert", "go forward ten meters"], environment: x.environment)
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertEqual(client.stdout, "")
        try await x.waitFor("go forward ten meters")
    }

    func testNonASCIITextOnAFrenchKeymapArrivesExactly() async throws {
        let (stack, x) = try await session(keymap: "fr")
        let text = "café naïve Größe, azerty qwerty 123 ?!"
        let (status, client) = try await run(stack, ["insert", text], environment: x.environment)
        XCTAssertEqual(status, 0, client.stderr)
        try await x.waitFor(text)
    }

    func testPasteRestoresTheClipboard() async throws {
        let (stack, x) = try await session()
        try await x.setClipboard("what the user had copied")
        let (status, client) = try await run(stack, ["insert", "--output", "paste", "pasted, déjà vu"], environment: x.environment)
        XCTAssertEqual(status, 0, client.stderr)
        try await x.waitFor("pasted, déjà vu")
        XCTAssertEqual(try x.clipboard(), "what the user had copied")
    }

    func testClipboardOnly() async throws {
        let (stack, x) = try await session()
        let (status, client) = try await run(stack, ["insert", "--output", "clipboard", "on the clipboard"], environment: x.environment)
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertEqual(try x.clipboard(), "on the clipboard")
        XCTAssertEqual(x.received, "", "nothing typed")
    }

    func testAMissingBackendNamesItsPackage() async throws {
        let (stack, x) = try await session()
        let empty = try makeTemporaryDirectory(self).path
        let environment = XSession.environment(x.display, path: "\(empty):\(stack.binDirectory)")
        let (status, client) = try await run(stack, ["insert", "hello"], environment: environment)
        XCTAssertEqual(status, 3)
        XCTAssertEqual(client.stderr, "voicebox: typing on X11 needs xdotool: apt install xdotool\n")
        let (pasteStatus, paste) = try await run(stack, ["insert", "--output", "clipboard", "hello"], environment: environment)
        XCTAssertEqual(pasteStatus, 3)
        XCTAssertEqual(paste.stderr, "voicebox: pasting on X11 needs xclip: apt install xclip\n")
        XCTAssertEqual(x.received, "")
    }

    func testDictateTypesWhatWasHeard() async throws {
        try Recordings.require()
        let (stack, x) = try await session()
        let service = try await ServiceHarness(stack: stack)
        addTeardownBlock { await service.stop() }
        let wav = try Recordings.wav("goforward.raw", in: try makeTemporaryDirectory(self))
        let dictation = try ClientRun(stack, ["dictate", "--output", "type"], environment: x.environment)
        _ = try await service.waitForNewRecognition(besides: [])
        try await service.waitForListening(true)
        let player = try Player(wav, sink: stack.micSink)
        let status = await dictation.finish()
        await player.waitUntilDone()
        XCTAssertEqual(status, 0, dictation.stderr)
        XCTAssertEqual(dictation.stdout, "", "typed, not printed")
        try await x.waitFor("go forward ten meters")
    }
}
