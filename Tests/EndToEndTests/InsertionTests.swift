import Foundation
import Glibc
import TestSupport
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
                && (try? runProgram(["xdpyinfo", "-display", display], seconds: 5).status) == 0
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
        try runProgram(["env", "DISPLAY=\(display)", "xclip", "-selection", selection, "-o"], seconds: 5).output
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

/// `voicebox insert` and `dictate --output` into a real X client under Xvfb.
final class InsertionTests: XCTestCase {
    static let sentence = "Café déjà vu — naïve façade, 100 % €"
    static let mixed = "Ελληνικά κόσμε, Привет мир, 日本語 😀 ± § © → ≠ ok"

    private func session(keymap: String? = nil, terminal: XSession.Terminal = .xterm) async throws -> (Stack, XSession) {
        let stack = try Stack.require()
        try XSession.require()
        if terminal == .lxterminal {
            try XCTSkipUnless(XSession.programPath("lxterminal") != nil, "lxterminal is not installed (scripts/deps installs it)")
        }
        let x = try await XSession(in: try makeTemporaryDirectory(self), keymap: keymap, terminal: terminal)
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

    /// 20 rounds of each text with both cores busy: every one must arrive exactly.
    private func typeUnderLoad(keymap: String?) async throws {
        let (stack, x) = try await session(keymap: keymap)
        let burner = try CPUBurner()
        addTeardownBlock { await burner.stop() }
        let report = try await TypingRounds.run(texts: [Self.sentence, Self.mixed], rounds: 20, received: { x.received },
                                                clear: { truncate(x.output, 0) }) { text in
            try ClientRun(stack, ["insert", text], environment: x.environment)
        }
        print("typing under load, X11 \(keymap ?? "us"): \(report)")
        XCTAssertEqual(report.exact, report.rounds, "\(report.misses)")
    }

    func testTypingIsExactUnderLoadOnAUSLayout() async throws {
        try await typeUnderLoad(keymap: nil)
    }

    func testTypingIsExactUnderLoadOnAFrenchLayout() async throws {
        try await typeUnderLoad(keymap: "fr")
    }

    func testPasteIntoXtermUsesShiftInsertAndRestoresBothSelections() async throws {
        let (stack, x) = try await session()
        try await x.setClipboard("what the user had copied")
        try await x.setClipboard("what the user had selected", selection: "primary")
        let (status, client) = try await run(stack, ["insert", "--output", "paste", "pasted, déjà vu"], environment: x.environment)
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertEqual(client.stdout, "")
        try await x.waitFor("pasted, déjà vu")
        XCTAssertEqual(try x.clipboard(), "what the user had copied")
        XCTAssertEqual(try x.clipboard("primary"), "what the user had selected")
    }

    func testPasteIntoAVTETerminalUsesCtrlShiftV() async throws {
        let (stack, x) = try await session(terminal: .lxterminal)
        try await x.setClipboard("what the user had copied")
        let (status, client) = try await run(stack, ["insert", "--output", "paste", "pasted into VTE, naïve"], environment: x.environment)
        XCTAssertEqual(status, 0, client.stderr)
        try await x.waitFor("pasted into VTE, naïve")
        XCTAssertEqual(try x.clipboard(), "what the user had copied")
    }

    func testAPasteTheWindowDoesNotTakeIsReportedAndTheTextKept() async throws {
        let (stack, x) = try await session()
        try await x.setClipboard("what the user had copied")
        let notifications = try await FakeNotifications(stack)
        addTeardownBlock { await notifications.close() }
        // Ctrl+V in xterm is "the next key literally": it pastes nothing.
        let (status, client) = try await run(stack, ["insert", "--output", "paste", "--paste-keys", "ctrl+v", "kept, not lost"],
                                             environment: x.environment)
        XCTAssertEqual(status, 4, client.stderr)
        XCTAssertEqual(client.stdout, "kept, not lost\n")
        XCTAssertTrue(client.stderr.contains("did not take the paste (ctrl+v was sent)"), client.stderr)
        XCTAssertEqual(client.stderr.filter { $0 == "\n" }.count, 1, "one line: \(client.stderr)")
        XCTAssertEqual(try x.clipboard(), "kept, not lost")
        XCTAssertFalse(x.received.contains("kept"), x.received.debugDescription)
        let shown = await notifications.shown
        XCTAssertEqual(shown.map(\.summary), ["Voicebox: dictation kept on the clipboard"])
    }

    func testClipboardOnly() async throws {
        let (stack, x) = try await session()
        let (status, client) = try await run(stack, ["insert", "--output", "clipboard", "on the clipboard"], environment: x.environment)
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertEqual(try x.clipboard(), "on the clipboard")
        XCTAssertEqual(x.received, "", "nothing typed")
    }

    func testAMissingHelperNamesItsPackageAndKeepsTheText() async throws {
        let (stack, x) = try await session()
        let notifications = try await FakeNotifications(stack)
        addTeardownBlock { await notifications.close() }
        // xclip is there (the text goes on the clipboard), xdotool is not.
        let bin = try makeTemporaryDirectory(self)
        try FileManager.default.createSymbolicLink(atPath: bin.path + "/xclip", withDestinationPath: XSession.programPath("xclip")!)
        let environment = XSession.environment(x.display, path: "\(bin.path):\(stack.binDirectory)")
        let (status, client) = try await run(stack, ["insert", "hello, kept"], environment: environment)
        XCTAssertEqual(status, 3)
        XCTAssertEqual(client.stderr, "voicebox: not inserted: typing on X11 needs xdotool: apt install xdotool; "
                       + "the text is kept on the clipboard and printed\n")
        XCTAssertEqual(client.stdout, "hello, kept\n")
        XCTAssertEqual(try x.clipboard(), "hello, kept")
        XCTAssertEqual(x.received, "")
        let shown = await notifications.shown
        XCTAssertEqual(shown.map(\.summary), ["Voicebox: dictation kept on the clipboard"])
        XCTAssertTrue(shown.first?.body.contains("apt install xdotool") ?? false)

        // Nothing at all to type or paste with: printed, and said so.
        let empty = try makeTemporaryDirectory(self).path
        let (bareStatus, bare) = try await run(stack, ["insert", "--output", "clipboard", "hello"],
                                               environment: XSession.environment(x.display, path: "\(empty):\(stack.binDirectory)"))
        XCTAssertEqual(bareStatus, 3)
        XCTAssertEqual(bare.stdout, "hello\n")
        XCTAssertTrue(bare.stderr.hasPrefix("voicebox: not inserted: pasting on X11 needs xclip: apt install xclip; the text is printed"),
                      bare.stderr)
    }

    func testTheDisplayGoneKeepsTheTextAndPassesOnXdotoolsMessage() async throws {
        let (stack, x) = try await session()
        let notifications = try await FakeNotifications(stack)
        addTeardownBlock { await notifications.close() }
        // A display nobody serves.
        var number = 400 + Int(getpid() % 200)
        while FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") { number += 1 }
        let (status, client) = try await run(stack, ["insert", "words that must not be lost"],
                                             environment: XSession.environment(":\(number)"))
        XCTAssertEqual(status, 4, client.stderr)
        XCTAssertEqual(client.stdout, "words that must not be lost\n")
        // xdotool's own words (Debian's xdotool names no display: "Can't open display: (null)").
        XCTAssertTrue(client.stderr.hasPrefix("voicebox: not inserted: xdotool: Error: Can't open display"), client.stderr)
        XCTAssertTrue(client.stderr.contains("the text is printed (not on the clipboard: xclip: Error: Can't open display: :\(number)"),
                      client.stderr)
        XCTAssertEqual(client.stderr.filter { $0 == "\n" }.count, 1, "one line: \(client.stderr)")
        let shown = await notifications.shown
        XCTAssertEqual(shown.map(\.summary), ["Voicebox: dictation not inserted"], "the clipboard is on that display too")
        XCTAssertEqual(x.received, "")
    }

    func testAWindowClosedWhileTypingKeepsTheText() async throws {
        let (stack, x) = try await session()
        let text = String(repeating: "Words typed while the window closes, déjà vu. ", count: 12)
        let client = try ClientRun(stack, ["insert", text], environment: x.environment)
        try await waitUntil("typing to begin", timeout: .seconds(15)) { x.received.count >= 10 }
        await x.closeTerminal()
        let status = await client.finish(timeout: .seconds(30))
        XCTAssertEqual(status, 4, client.stderr)
        XCTAssertEqual(client.stdout, text + "\n")
        XCTAssertTrue(client.stderr.contains("was closed or lost the keyboard focus while the text was typed"), client.stderr)
        XCTAssertEqual(try x.clipboard(), text)
    }

    /// Found by the red team: SIGTERM (or Ctrl-C, SIGHUP) mid-typing ended voicebox at once while
    /// its xdotool typed on alone, the text was lost and the keymap left changed. Now typing stops
    /// between two chunks, the map is given back, the text is kept and the exit status is 143.
    func testASignalWhileTypingStopsTypingKeepsTheTextAndGivesTheKeymapBack() async throws {
        let (stack, x) = try await session()
        let keymapBefore = try runProgram(["env", "DISPLAY=\(x.display)", "xmodmap", "-pke"], seconds: 10).output
        let text = String(repeating: "Le café numéro un est prêt à Zürich. ", count: 30)
        let client = try ClientRun(stack, ["insert", text], environment: x.environment)
        try await waitUntil("typing to begin", timeout: .seconds(15)) { x.received.count >= 20 }
        client.process.signal(SIGTERM)
        let status = await client.finish(timeout: .seconds(30))
        XCTAssertEqual(status, 143, client.stderr)
        XCTAssertEqual(client.stdout, text + "\n")
        XCTAssertTrue(client.stderr.contains("interrupted by SIGTERM while typing"), client.stderr)
        XCTAssertEqual(try x.clipboard(), text)
        let arrived = x.received.count
        XCTAssertLessThan(arrived, text.count, "all of it was typed before the signal: the test proves nothing")
        try await Task.sleep(for: .milliseconds(1500))
        XCTAssertEqual(x.received.count, arrived, "something went on typing after voicebox ended")
        let keymapAfter = try runProgram(["env", "DISPLAY=\(x.display)", "xmodmap", "-pke"], seconds: 10).output
        XCTAssertEqual(keymapAfter, keymapBefore, "the keymap was left changed")
    }

    /// Found by the red team: a second insertion typed with the first one's spare keycodes, which
    /// the first gave back midway: its non-ASCII characters were lost, and both said they were done.
    /// Now insertions take turns (a lock in $XDG_RUNTIME_DIR): both arrive exactly, in order.
    func testTwoOverlappingInsertionsBothArriveExactly() async throws {
        let (stack, x) = try await session()
        let first = "Noël à Zürich. "
        let second = String(repeating: "Le café numéro deux est prêt à Zürich, Noël. ", count: 6)
        let one = try ClientRun(stack, ["insert", first], environment: x.environment)
        try await waitUntil("the first to begin", timeout: .seconds(15)) { x.received.count >= 2 }
        let two = try ClientRun(stack, ["insert", second], environment: x.environment)
        let firstStatus = await one.finish(timeout: .seconds(60))
        let secondStatus = await two.finish(timeout: .seconds(60))
        XCTAssertEqual(firstStatus, 0, one.stderr)
        XCTAssertEqual(secondStatus, 0, two.stderr)
        try await x.waitFor(first + second)
    }

    /// Found by the red team: with the focus moved to another window midway, the rest of the text
    /// was typed there (the focus was checked only at the end). Now it is checked before each chunk
    /// of 32 keys: typing stops, the other window gets at most one chunk, the text is kept.
    func testFocusMovedWhileTypingStopsTypingWithinAChunk() async throws {
        let (stack, x) = try await session()
        let otherOutput = x.output + ".other"
        _ = FileManager.default.createFile(atPath: otherOutput, contents: nil)
        let other = try Subprocess(XSession.programPath("xterm")!, ["-u8", "-e", "/bin/sh", "-c", "stty raw -echo; exec cat >> \"$0\"", otherOutput],
                                   environment: x.environment, stdoutFD: XSession.devNullForTests, stderrFD: XSession.devNullForTests)
        addTeardownBlock { other.signal(SIGKILL); _ = await other.wait(timeout: .seconds(5)) }
        let otherWindow = try runProgram(["env", "DISPLAY=\(x.display)", "xdotool", "search", "--sync", "--pid", "\(other.pid)"], seconds: 15)
            .output.split(whereSeparator: \.isNewline).first.map(String.init)
        let window = try XCTUnwrap(otherWindow)
        try await Task.sleep(for: .milliseconds(300))  // (no window manager: the focus stays on the first window)
        let text = String(repeating: "Typing goes on only while the window has the focus, déjà vu. ", count: 20)
        let client = try ClientRun(stack, ["insert", text], environment: x.environment)
        try await waitUntil("typing to begin", timeout: .seconds(15)) { x.received.count >= 20 }
        _ = try runProgram(["env", "DISPLAY=\(x.display)", "xdotool", "windowfocus", "--sync", window], seconds: 10)
        let status = await client.finish(timeout: .seconds(60))
        XCTAssertEqual(status, 4, client.stderr)
        XCTAssertEqual(client.stdout, text + "\n")
        XCTAssertTrue(client.stderr.contains("lost the keyboard focus"), client.stderr)
        try await Task.sleep(for: .milliseconds(1000))
        let strayed = String(decoding: FileManager.default.contents(atPath: otherOutput) ?? Data(), as: UTF8.self)
        print("METRIC focus moved mid-typing: \(x.received.count) characters where typing began, \(strayed.count) in the other window")
        XCTAssertLessThanOrEqual(strayed.count, 32, "more than one chunk went to the other window: \(strayed.debugDescription)")
        XCTAssertLessThan(x.received.count, text.count, "all of it was typed before the focus moved: the test proves nothing")
    }

    // @SoundServer: the microphone
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
        try await x.waitFor("Go forward ten meters")
    }
}
