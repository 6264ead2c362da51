import Foundation
import Glibc
@testable import TestSupport
import XCTest

/// `voicebox insert` on a real GNOME Wayland session, which gives programs no virtual keyboard:
/// typed through the session's IBus, from a process that has only the session's environment; what
/// the GTK entry holds is what is asserted, and the user's IBus engine is asserted to be back
/// afterwards. (dictate there: SoundServerTests.GnomeDictationTests; under load:
/// SpeedTests.IBusTypingUnderLoadTests.)
final class GnomeInsertionTests: XCTestCase {
    /// One session for the class; each test leaves it as it found it (an empty entry with the
    /// focus, IBus's engine xkb:us::eng).
    static let gnome = GnomeSession.classFixture()

    override class func tearDown() {
        gnome.stopNow()
        super.tearDown()
    }

    private func session() async throws -> (Stack, GnomeSession) {
        let stack = try Stack.require()
        let gnome = try await Self.gnome.session()
        try await gnome.prepareForTest()
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")
        return (stack, gnome)
    }

    private func insert(_ stack: Stack, _ gnome: GnomeSession, _ arguments: [String]) async throws -> (Int32?, ClientRun) {
        let client = try stopsAtEnd(ClientRun(stack, ["insert"] + arguments, environment: gnome.environment))
        return (await client.finish(timeout: .seconds(60)), client)
    }

    /// fcitx5 takes IBus's place: its address file names the session bus, where it answers for
    /// org.freedesktop.IBus with input contexts only (no engines of others). A bus where something
    /// other than ibus-daemon answers is not taken for IBus: today's fallbacks apply.
    func testABusWhereIBusDoesNotAnswerIsNotTakenForIt() async throws {
        let stack = try Stack.require()
        let environment = ["PATH": "/usr/bin:/bin", "WAYLAND_DISPLAY": "voicebox-no-such-display", "XDG_CURRENT_DESKTOP": "GNOME",
                           "XDG_SESSION_TYPE": "wayland", "IBUS_ADDRESS": stack.busAddress, "HOME": NSTemporaryDirectory()]
        let client = try stopsAtEnd(ClientRun(stack, ["insert", "--verbose", "kept"], environment: environment))
        let status = await client.finish(timeout: .seconds(30))
        XCTAssertTrue(client.stderr.hasPrefix("voicebox: inserting: put on the clipboard for you to paste: GNOME or KDE on Wayland "
                                              + "offers programs no virtual keyboard, no IBus daemon answers"), client.stderr)
        XCTAssertEqual(client.stdout, "kept\n")
        XCTAssertEqual(status, 4, "wl-copy finds no Wayland display: \(client.stderr)")
    }

    /// A session that does not name its desktop (gnome-shell started by a script: gdm sets
    /// XDG_CURRENT_DESKTOP, gnome-shell does not): the compositor is asked whether it offers a
    /// virtual keyboard, and mutter does not, so IBus types, not wtype.
    func testTheCompositorNotTheSessionsNameDecidesThatIBusTypes() async throws {
        let (stack, gnome) = try await session()
        var environment = gnome.environment
        environment["XDG_CURRENT_DESKTOP"] = nil
        let client = try stopsAtEnd(ClientRun(stack, ["insert", "--verbose", Texts.greeting], environment: environment))
        let status = await client.finish(timeout: .seconds(60))
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertTrue(client.stderr.hasPrefix("voicebox: inserting: typed through IBus at unix:"), client.stderr)
        try await gnome.window.waitFor(Texts.greeting)
    }

    func testInsertTypesMixedScriptsThroughIBusAndPutsTheEngineBack() async throws {
        let (stack, gnome) = try await session()
        let (status, client) = try await insert(stack, gnome, ["--verbose", Texts.greeting])
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertEqual(client.stdout, "", "typed, not kept")
        XCTAssertTrue(client.stderr.hasPrefix("voicebox: inserting: typed through IBus at unix:"), client.stderr)
        try await gnome.window.waitFor(Texts.greeting)
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng", "the user's engine is back")
        // A second insertion goes after the first, where the cursor is.
        let (again, second) = try await insert(stack, gnome, [" — und weiter"])
        XCTAssertEqual(again, 0, second.stderr)
        try await gnome.window.waitFor(Texts.greeting + " — und weiter")
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")
    }

    /// A text longer than one commit (2,000 bytes): mutter keeps one pending commit per frame,
    /// so each piece is sent once the field has shown the one before (the middle one was lost).
    /// Then emoji sequences (200 characters, 5,000 bytes): counted in characters, they made one
    /// piece over libwayland's 4 KiB, and mutter cut the window's connection.
    func testALongTextArrivesWholeInPieces() async throws {
        let (stack, gnome) = try await session()
        let text = (0..<150).map { "Satz \($0), Grüße — 東京 ✓. " }.joined()
        XCTAssertGreaterThan(text.utf8.count, 2 * 2_000, "three pieces (IBusTyper.pieceBytes)")
        let (status, client) = try await insert(stack, gnome, [text])
        XCTAssertEqual(status, 0, client.stderr)
        try await gnome.window.waitFor(text)
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")
        try await gnome.window.clear()
        let family = String(repeating: "👩‍👩‍👧‍👦", count: 200)
        let (emojiStatus, emojiClient) = try await insert(stack, gnome, [family])
        XCTAssertEqual(emojiStatus, 0, emojiClient.stderr)
        try await gnome.window.waitFor(family)
        XCTAssertTrue(gnome.window.isRunning, "the window lost its connection")
    }

    /// SIGTERM or Ctrl-C while Voicebox's engine is in place, the text committed or about to be, not
    /// confirmed (the window hangs: it cannot show the text yet): the user's engine is put back
    /// before voicebox exits, the text is kept (printed, on the clipboard), and the exit status is
    /// the signal's.
    func testASignalMidCommitPutsTheEngineBackAndKeepsTheText() async throws {
        let (stack, gnome) = try await session()
        for (signal, status) in [(SIGTERM, Int32(143)), (SIGINT, 130)] {
            try await gnome.window.clear()
            let text = "Mitten im Satz, \(signal == SIGTERM ? "SIGTERM" : "SIGINT") — 東京"
            gnome.window.pause()
            let client = try stopsAtEnd(ClientRun(stack, ["insert", text], environment: gnome.environment))
            try await waitUntil("Voicebox's engine to be IBus's", timeout: .seconds(20)) { (try? gnome.ibusEngine()) == "voicebox" }
            client.process.signal(signal)
            let exit = await client.finish(timeout: .seconds(30))
            gnome.window.resume()
            XCTAssertEqual(exit, status, client.stderr)
            XCTAssertEqual(client.stdout, text + "\n", "kept")
            XCTAssertTrue(client.stderr.contains("interrupted by \(signal == SIGTERM ? "SIGTERM" : "SIGINT") while typing"), client.stderr)
            XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng", "the user's engine is back")
            // Committed before the signal came, or not yet: the window, running again, shows all of
            // it or nothing, never a part.
            try? await waitUntil("the entry to show the text", timeout: .seconds(5)) { gnome.window.received == text }
            XCTAssertTrue(["", text].contains(gnome.window.received), gnome.window.received)
        }
    }

    /// SIGKILL cannot be caught: killed with its engine in place, voicebox cannot put the user's
    /// back, and ibus-daemon 1.5.27 then sets none. The guardian voicebox leaves for the length of
    /// the insertion (a shell waiting on a pipe) does it once voicebox's connection has gone.
    func testKilledMidCommitTheGuardianPutsTheEngineBack() async throws {
        let (stack, gnome) = try await session()
        gnome.window.pause()
        let client = try stopsAtEnd(ClientRun(stack, ["insert", "killed mid-commit"], environment: gnome.environment))
        try await waitUntil("Voicebox's engine to be IBus's", timeout: .seconds(20)) { (try? gnome.ibusEngine()) == "voicebox" }
        client.process.signal(SIGKILL)
        let exit = await client.finish(timeout: .seconds(30))
        gnome.window.resume()
        XCTAssertEqual(exit, 128 + SIGKILL)
        try await waitUntil("the user's engine to be back", timeout: .seconds(15)) { (try? gnome.ibusEngine()) == "xkb:us::eng" }
        try? await waitUntil("the entry to show the text", timeout: .seconds(5)) { gnome.window.received == "killed mid-commit" }
        XCTAssertTrue(["", "killed mid-commit"].contains(gnome.window.received), "all of it or nothing: \(gnome.window.received)")
    }

    /// Nothing has the focus (the only window closed): IBus focuses a context of its own, which
    /// shows nothing anywhere. Not confirmed: the text is kept, the engine put back.
    func testWithNoFieldFocusedTheTextIsKept() async throws {
        let (stack, gnome) = try await session()
        try await gnome.closeWindow(reopen: false)
        addTeardownBlock { try? await gnome.reopenWindow() }
        let (status, client) = try await insert(stack, gnome, ["nobody is listening"])
        XCTAssertEqual(status, 4, client.stderr)
        XCTAssertEqual(client.stdout, "nobody is listening\n")
        // The daemon names its own context ("fake") to an engine that takes FocusInId, but asks a new
        // engine whether it does while it already focuses it: the first FocusIn may name nobody.
        XCTAssertTrue(client.stderr.hasPrefix("voicebox: not inserted: no input field has the keyboard focus")
                      || client.stderr.hasPrefix("voicebox: not inserted: no field reported text within 3 s"), client.stderr)
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng", "the user's engine is back")
    }

    /// A Korean syllable half-composed in ibus-hangul (its preedit "하") when the text comes: the
    /// engine declares its preedit committed on a focus change (IBus's PREEDIT_COMMIT), so the
    /// daemon finishes the composition as it switches, before the text; the engine is hangul again.
    func testACompositionOfTheUsersEngineIsFinishedBeforeTheText() async throws {
        let (stack, gnome) = try await session()
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/share/ibus/component/hangul.xml"),
                          "ibus-hangul is not installed (scripts/deps installs it)")
        addTeardownBlock { _ = try? gnome.run(["ibus", "engine", "xkb:us::eng"]) }
        try gnome.run(["ibus", "engine", "hangul"])
        try await waitUntil("the hangul engine", timeout: .seconds(10)) { (try? gnome.ibusEngine()) == "hangul" }
        // Six rounds: the syllable the daemon commits at the switch and our text can land in one
        // frame, where mutter keeps only the second (a red-team pass lost it in 1 of 3 rounds).
        for round in 1...6 {
            try await gnome.window.clear()
            // The Hangul key (the engine, set back, starts in Latin mode again), g, k: ㅎ + ㅏ
            try await gnome.press([0xFF31, 0x67, 0x6B])
            try await waitUntil("the composition 하 in the entry", timeout: .seconds(10)) { gnome.window.preedit == "하" }
            XCTAssertEqual(gnome.window.received, "", "still composing")
            let (status, client) = try await insert(stack, gnome, ["서울, Seoul"])
            XCTAssertEqual(status, 0, "round \(round): \(client.stderr)")
            try await gnome.window.waitFor("하서울, Seoul")
            XCTAssertEqual(gnome.window.preedit, "")
            XCTAssertEqual(try gnome.ibusEngine(), "hangul", "the user's engine is back")
        }
    }

    /// A window that takes the commit but never reports its text (a VTE terminal, lxterminal as
    /// it comes): the text arrives exactly, but its arrival cannot be confirmed, so it is also kept.
    func testATerminalThatDoesNotReportItsTextGetsItExactlyAndKeepsIt() async throws {
        let (stack, gnome) = try await session()
        try XCTSkipUnless(XSession.programPath("lxterminal") != nil, "lxterminal is not installed (scripts/deps installs it)")
        let output = gnome.root + "/terminal.txt"
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let terminal = try Subprocess("/usr/bin/lxterminal", ["--no-remote", "-e", "/bin/sh -c 'stty raw -echo; exec cat >> \(output)'"],
                                      environment: gnome.windowEnvironment, stdoutFD: XSession.devNullForTests,
                                      stderrFD: XSession.devNullForTests)
        addTeardownBlock {
            terminal.signal(SIGKILL)
            _ = await terminal.wait(timeout: .seconds(5))
            try? await gnome.reopenWindow()
        }
        let received = { String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self) }
        // Ready when a key pressed arrives (the shell has made the terminal raw); then wiped.
        try await waitUntil("the terminal to take keys", timeout: .seconds(30)) {
            try? await gnome.press([0x2E])
            try? await Task.sleep(for: .milliseconds(300))
            return received().contains(".")
        }
        truncate(output, 0)
        let (status, client) = try await insert(stack, gnome, [Texts.greeting])
        XCTAssertEqual(status, 4, client.stderr)
        XCTAssertEqual(client.stdout, Texts.greeting + "\n", "kept")
        XCTAssertTrue(client.stderr.contains("no field reported text within 3 s of the commit through IBus"), client.stderr)
        try await waitUntil("the terminal to receive the text", timeout: .seconds(10)) { received() == Texts.greeting }
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")
    }
}
