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

    private func session() async throws -> (Stack, GnomeSession) { try await readyGnomeSession(Self.gnome) }

    private func insert(_ stack: Stack, _ gnome: GnomeSession, _ arguments: [String]) async throws -> (Int32?, ClientRun) {
        try await insert(in: gnome, stack, arguments)
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

    /// A signal while the way is still being chosen (here IBus's address names a socket that never
    /// answers, which takes 2 s to give up on) is noted as during the typing: the text is kept and
    /// the exit status is the signal's. A second one while the text is being kept (here wl-copy
    /// takes 3 s) does not end `voicebox` before it has printed the text.
    func testSignalsWhileTheWayIsChosenAndWhileTheTextIsKeptLoseNothing() async throws {
        let stack = try Stack.require()
        let directory = try makeTemporaryDirectory(self)
        let socket = directory.appendingPathComponent("ibus").path
        let silent = try Subprocess("/usr/bin/python3", ["-c", "import socket, sys, time\ns = socket.socket(socket.AF_UNIX)\n"
                                                          + "s.bind(sys.argv[1])\ns.listen(8)\ntime.sleep(60)", socket])
        addTeardownBlock { silent.signal(SIGKILL); _ = await silent.wait(timeout: .seconds(5)) }
        // A slow clipboard: it says it has started, then takes 3 s.
        let programs = directory.appendingPathComponent("bin").path
        try FileManager.default.createDirectory(atPath: programs, withIntermediateDirectories: true)
        let copying = directory.appendingPathComponent("copying").path
        try "#!/bin/sh\ncat > /dev/null\ntouch \(copying)\nsleep 3\n".write(toFile: programs + "/wl-copy", atomically: true, encoding: .utf8)
        chmod(programs + "/wl-copy", 0o755)
        try await waitUntil("the silent socket", timeout: .seconds(10)) { FileManager.default.fileExists(atPath: socket) }
        let environment = ["PATH": programs + ":/usr/bin:/bin", "WAYLAND_DISPLAY": "voicebox-no-such-display",
                           "XDG_CURRENT_DESKTOP": "GNOME", "XDG_SESSION_TYPE": "wayland", "IBUS_ADDRESS": "unix:path=" + socket,
                           "HOME": directory.path, "XDG_RUNTIME_DIR": directory.path]
        let client = try stopsAtEnd(ClientRun(stack, ["insert", "kept"], environment: environment))
        try await Task.sleep(for: .milliseconds(700))
        client.process.signal(SIGTERM)
        try await waitUntil("the text to be put on the clipboard", timeout: .seconds(20)) { FileManager.default.fileExists(atPath: copying) }
        client.process.signal(SIGINT)
        let status = await client.finish(timeout: .seconds(30))
        XCTAssertEqual(status, 143, client.stderr)
        XCTAssertEqual(client.stdout, "kept\n")
        XCTAssertTrue(client.stderr.contains("interrupted by SIGTERM"), client.stderr)
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

    /// Typed as IBus's panel extension: the user's engine is never switched, and the emoji picker
    /// (ibus-extension-gtk3, whose name that is) has it back afterwards.
    func testInsertTypesMixedScriptsThroughIBusAndChangesNothingOfTheUsers() async throws {
        let (stack, gnome) = try await session()
        let bus = try gnome.ibusBus()
        let owner = await GnomeSession.extensionOwner(bus)
        let engines = Shared<[String]>([])
        let watching = Task {
            while !Task.isCancelled {
                if let engine = try? gnome.ibusEngine() { engines.withLock { $0.append(engine) } }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        let (status, client) = try await insert(stack, gnome, ["--verbose", Texts.greeting])
        watching.cancel()
        _ = await watching.value
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertEqual(client.stdout, "", "typed, not kept")
        XCTAssertTrue(client.stderr.hasPrefix("voicebox: inserting: typed through IBus at unix:"), client.stderr)
        try await gnome.window.waitFor(Texts.greeting)
        XCTAssertEqual(Set(engines.value), ["xkb:us::eng"], "the engine was never switched")
        let ownerAfter = await GnomeSession.extensionOwner(bus)
        XCTAssertEqual(ownerAfter, owner, "the emoji picker has its name back")
        // A second insertion goes after the first, where the cursor is.
        let (again, second) = try await insert(stack, gnome, [" — und weiter"])
        XCTAssertEqual(again, 0, second.stderr)
        try await gnome.window.waitFor(Texts.greeting + " — und weiter")
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")
        try await gnome.waitUntilEmojiTypingWorks()
        await bus.close()
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

    /// Four insertions started at once, each of six pieces, the first held up by its window: one
    /// types at a time (the session's insertion lock), each as the panel extension, so each text
    /// arrives whole, none inside another, no engine is switched, and the emoji picker has its
    /// name back at the end.
    func testInsertionsStartedAtOnceArriveWholeOneAfterAnother() async throws {
        let (stack, gnome) = try await session()
        let bus = try gnome.ibusBus()
        let owner = await GnomeSession.extensionOwner(bus)
        let texts = (1...4).map { run in (0..<400).map { "\(run)·\($0) Grüße — 東京 ✓ " }.joined() + "|" }
        let engines = Shared<Set<String>>([])
        let watching = Task {
            while !Task.isCancelled {
                if let engine = try? gnome.ibusEngine() { engines.withLock { _ = $0.insert(engine) } }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        // The window frozen until one holds the extension, and 1.5 s more: the others come meanwhile.
        gnome.window.pause()
        let clients = try texts.map { try stopsAtEnd(ClientRun(stack, ["insert", "--verbose", $0], environment: gnome.environment)) }
        try await waitUntil("one to hold the panel extension", timeout: .seconds(20)) {
            let now = await GnomeSession.extensionOwner(bus)
            return now != nil && now != owner
        }
        try await Task.sleep(for: .milliseconds(1_500))
        gnome.window.resume()
        for client in clients {
            let status = await client.finish(timeout: .seconds(60))
            XCTAssertEqual(status, 0, client.stderr)
            XCTAssertFalse(client.stderr.contains("an engine of Voicebox's types instead"), client.stderr)
        }
        watching.cancel()
        _ = await watching.value
        XCTAssertEqual(engines.value, ["xkb:us::eng"], "each waited for its turn at the panel extension, none switched engines")
        try await waitUntil("all four texts in the entry", timeout: .seconds(15)) {
            gnome.window.received.unicodeScalars.count == texts.map { $0.unicodeScalars.count }.reduce(0, +)
        }
        let received = gnome.window.received
        let order = texts.indices.sorted { received.range(of: texts[$0])?.lowerBound ?? received.endIndex
                                           < received.range(of: texts[$1])?.lowerBound ?? received.endIndex }
        XCTAssertEqual(received, order.map { texts[$0] }.joined(), "each text whole, one after another")
        let ownerAfter = await GnomeSession.extensionOwner(bus)
        XCTAssertEqual(ownerAfter, owner, "the emoji picker has its name back")
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")
        await bus.close()
    }

    /// Two insertions that overlap and share no lock file (one started from cron or ssh, without
    /// XDG_RUNTIME_DIR): they take turns on IBus's own bus, so both go in whole, one after the
    /// other, each as the panel extension.
    func testOverlappingInsertionsFromDifferentEnvironmentsTakeTurns() async throws {
        let (stack, gnome) = try await session()
        let (texts, runs, statuses) = try await overlappingInsertions(in: gnome, stack)
        for (run, status) in zip(runs, statuses) {
            XCTAssertEqual(status, 0, run.stderr)
            XCTAssertFalse(run.stderr.contains("an engine of Voicebox's types instead"), run.stderr)
        }
        try await gnome.window.waitFor(texts.joined())
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")
    }

    /// SIGTERM or Ctrl-C while Voicebox holds IBus's panel extension, the text handed to the field
    /// but not confirmed (the window hangs: it cannot show it yet): the text is kept (printed, on
    /// the clipboard), the exit status is the signal's, the emoji picker has its name back, and the
    /// user's engine was never changed. SIGKILL: the bus gives the name back by itself.
    func testASignalMidCommitKeepsTheTextAndGivesTheExtensionBack() async throws {
        let (stack, gnome) = try await session()
        let bus = try gnome.ibusBus()
        let owner = await GnomeSession.extensionOwner(bus)
        XCTAssertNotNil(owner, "ibus-extension-gtk3 holds the name, as on a desktop")
        for (signal, status) in [(SIGTERM, Int32(143)), (SIGINT, 130), (SIGKILL, 128 + SIGKILL)] {
            try await gnome.window.clear()
            let text = "Mitten im Satz, \(signal) — 東京"
            gnome.window.pause()
            let client = try stopsAtEnd(ClientRun(stack, ["insert", text], environment: gnome.environment))
            try await waitUntil("Voicebox to hold the panel extension", timeout: .seconds(20)) {
                let now = await GnomeSession.extensionOwner(bus)
                return now != nil && now != owner
            }
            client.process.signal(signal)
            let exit = await client.finish(timeout: .seconds(30))
            gnome.window.resume()
            XCTAssertEqual(exit, status, client.stderr)
            if signal != SIGKILL {
                XCTAssertEqual(client.stdout, text + "\n", "kept")
                XCTAssertTrue(client.stderr.contains("interrupted by \(signal == SIGTERM ? "SIGTERM" : "SIGINT") while typing"), client.stderr)
            }
            try await waitUntil("the emoji picker to have its name back", timeout: .seconds(10)) {
                await GnomeSession.extensionOwner(bus) == owner
            }
            XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng", "never changed")
            // Handed on before the signal came, or not yet: the window, running again, shows all of
            // it or nothing, never a part.
            try? await waitUntil("the entry to show the text", timeout: .seconds(5)) { gnome.window.received == text }
            XCTAssertTrue(["", text].contains(gnome.window.received), gnome.window.received)
            try await gnome.waitUntilEmojiTypingWorks()
        }
        await bus.close()
    }

    /// The overview opening as the text is committed (its search entry takes the focus): the text
    /// arrives in the entry (exit 0), or it is kept (exit 4); never exit 0 with nothing there.
    func testTheFocusMovingAsTheTextIsCommittedNeverLosesIt() async throws {
        let (stack, gnome) = try await session()
        addTeardownBlock { try? await gnome.setOverview(false) }
        var outcomes: [String] = []
        for delay in [0, 15, 30] {
            try await gnome.prepareForTest()
            let text = "Überblick \(delay) — 東京"
            let client = try stopsAtEnd(ClientRun(stack, ["insert", text], environment: gnome.environment))
            try await Task.sleep(for: .milliseconds(delay))
            try await gnome.setOverview(true)
            let status = await client.finish(timeout: .seconds(60))
            try? await waitUntil("the entry to show the text", timeout: .seconds(2)) { gnome.window.received == text }
            let arrived = gnome.window.received == text
            outcomes.append("\(delay) ms: exit \(String(describing: status)), \(arrived ? "arrived" : "not there")")
            if status == 0 {
                XCTAssertTrue(arrived, "exit 0 but the entry holds \(gnome.window.received.debugDescription)")
            } else {
                XCTAssertEqual(status, 4, client.stderr)
                XCTAssertEqual(client.stdout, text + "\n", "kept")
            }
            try await gnome.setOverview(false)
            try await waitUntil("the entry to have the focus again", timeout: .seconds(20)) {
                if !gnome.window.hasFocus { try? await gnome.reopenWindow() }
                return gnome.window.hasFocus
            }
        }
        print("METRIC the overview opening as the text is committed: \(outcomes.joined(separator: "; "))")
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
    /// user's engine is not switched, so the composition stays as the user left it, after the
    /// text, and their next keys go on with it.
    func testACompositionOfTheUsersEngineIsLeftAsTheUserLeftIt() async throws {
        let (stack, gnome) = try await session()
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/share/ibus/component/hangul.xml"),
                          "ibus-hangul is not installed (scripts/deps installs it)")
        addTeardownBlock { _ = try? gnome.run(["ibus", "engine", "xkb:us::eng"]) }
        let extensionOwner = await GnomeSession.extensionOwner(try gnome.ibusBus())
        try gnome.run(["ibus", "engine", "hangul"])
        try await waitUntil("the hangul engine", timeout: .seconds(10)) { (try? gnome.ibusEngine()) == "hangul" }
        try await gnome.press([0xFF31])  // the Hangul key: Hangul mode, kept from round to round
        for round in 1...3 {
            try await gnome.window.clear()
            try await gnome.press([0x67, 0x6B])  // g, k: ㅎ + ㅏ
            try await waitUntil("the composition 하 in the entry", timeout: .seconds(10)) { gnome.window.preedit == "하" }
            let (status, client) = try await insert(stack, gnome, ["서울, Seoul"])
            XCTAssertEqual(status, 0, "round \(round): \(client.stderr)")
            try await gnome.window.waitFor("서울, Seoul")
            XCTAssertEqual(gnome.window.preedit, "하", "round \(round): the composition is as the user left it")
            XCTAssertEqual(try gnome.ibusEngine(), "hangul")
            // s (ㄴ) goes on with it: 한; the space ends it.
            try await gnome.press([0x73])
            try await waitUntil("the composition 한", timeout: .seconds(10)) { gnome.window.preedit == "한" }
            try await gnome.press([0x20])
            try await gnome.window.waitFor("서울, Seoul한 ")
        }
        let ownerAfter = await GnomeSession.extensionOwner(try gnome.ibusBus())
        XCTAssertEqual(ownerAfter, extensionOwner, "the emoji picker has its name back")
    }

    /// Where the client reports its field's text (once an engine that asks for it, as ibus-hangul,
    /// has been in use), the text must show: a multi-line text view reports only its cursor's
    /// line, so dictations ending in a line break, or in a short last line, are confirmed by it.
    func testATextViewThatReportsOnlyItsLineConfirmsTextsWithLineBreaks() async throws {
        let (stack, gnome) = try await session()
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/share/ibus/component/hangul.xml"),
                          "ibus-hangul is not installed (scripts/deps installs it)")
        try await gnome.reopenWindow(textView: true)
        addTeardownBlock { try? await gnome.reopenWindow() }
        // From now on the session's client reports its fields' text (IBus asks it to for an engine
        // that wants it, and does not stop asking).
        try gnome.run(["ibus", "engine", "hangul"])
        try gnome.run(["ibus", "engine", "xkb:us::eng"])
        var expected = ""
        for text in ["line one\n", "hello world\nab", "a\n\n", "dictated sentence.\n\nNext"] {
            let (status, client) = try await insert(stack, gnome, [text])
            expected += text
            XCTAssertEqual(status, 0, "\(text.debugDescription): \(client.stderr)")
            XCTAssertEqual(client.stdout, "", "typed, not kept")
            try await gnome.window.waitFor(expected)
        }
    }

    /// A field that reports its text and refuses part of ours (a length limit of 10): what it took
    /// ends as ours does, but is not all of it, so the text is kept, exit 4.
    func testAFieldThatTakesOnlyPartOfTheTextKeepsIt() async throws {
        let (stack, gnome) = try await session()
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/share/ibus/component/hangul.xml"),
                          "ibus-hangul is not installed (scripts/deps installs it)")
        try await gnome.reopenWindow(maxLength: 10)
        addTeardownBlock { try? await gnome.reopenWindow() }
        try gnome.run(["ibus", "engine", "hangul"])  // from now on fields report their text (see above)
        try gnome.run(["ibus", "engine", "xkb:us::eng"])
        let text = "hahahahahahahahahaha"
        let (status, client) = try await insert(stack, gnome, [text])
        XCTAssertEqual(status, 4, client.stderr)
        XCTAssertEqual(client.stdout, text + "\n", "kept")
        try await gnome.window.waitFor("hahahahaha")
    }

    /// A dead key typed before `voicebox insert` ran (nothing watched it begin): the text goes in
    /// before it, and the dead key stays as the user left it: their "e" then makes "é".
    func testADeadKeyTypedBeforeTheInsertionIsLeftAsTheUserLeftIt() async throws {
        let (stack, gnome) = try await session()
        try gnome.run(["gsettings", "set", "org.gnome.desktop.input-sources", "sources", "[('xkb', 'us+intl')]"])
        addTeardownBlock { _ = try? gnome.run(["gsettings", "set", "org.gnome.desktop.input-sources", "sources", "[('xkb', 'us')]"]) }
        try await waitUntil("the dead key's composition in the entry", timeout: .seconds(20)) {
            if gnome.window.preedit == "´" { return true }
            try? await gnome.press([0xFE51])
            try? await Task.sleep(for: .milliseconds(300))
            return gnome.window.preedit == "´"
        }
        let (status, client) = try await insert(stack, gnome, [Texts.greeting])
        XCTAssertEqual(status, 0, client.stderr)
        try await gnome.window.waitFor(Texts.greeting)
        XCTAssertEqual(gnome.window.preedit, "´", "the composition is as the user left it")
        try await gnome.press([0x65])
        try await gnome.window.waitFor(Texts.greeting + "é")
    }

    /// A window that takes the commit but never reports its text (a VTE terminal): it reports its
    /// cursor, which moved, so the text, arrived exactly, counts as typed.
    func testATerminalThatReportsOnlyItsCursorGetsTheTextExactly() async throws {
        let (stack, gnome) = try await session()
        let terminal = try await openTerminal(in: gnome)
        let (status, client) = try await insert(stack, gnome, [Texts.greeting])
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertEqual(client.stdout, "", "typed, not kept")
        try await waitUntil("the terminal to receive the text", timeout: .seconds(10)) { terminal.received == Texts.greeting }
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")
    }
}
