import Foundation
import VoiceboxBus
@testable import VoiceboxInsertion
import VoiceboxContract
import XCTest
@testable import voicebox

/// What the IBus route decides without a daemon: where the daemon's address is, what our engine and
/// text look like on its bus, what counts as the field showing the text, and when IBus is chosen.
final class IBusLogicTests: XCTestCase {
    // MARK: The address (libibus's ibus_get_socket_path and ibus_get_address)

    func testTheAddressFileIsNamedAfterTheDisplay() {
        let id = "0123abcd"
        XCTAssertEqual(IBusAddress.filePath(["HOME": "/home/u", "WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":1"], machineID: id),
                       "/home/u/.config/ibus/bus/0123abcd-unix-wayland-0", "Wayland first, the display's name as it is")
        XCTAssertEqual(IBusAddress.filePath(["HOME": "/home/u", "DISPLAY": ":1.0"], machineID: id),
                       "/home/u/.config/ibus/bus/0123abcd-unix-1", "X11: the display number, the screen dropped")
        XCTAssertEqual(IBusAddress.filePath(["HOME": "/home/u", "DISPLAY": "remote:10.0"], machineID: id),
                       "/home/u/.config/ibus/bus/0123abcd-remote-10")
        XCTAssertEqual(IBusAddress.filePath(["HOME": "/home/u"], machineID: id), "/home/u/.config/ibus/bus/0123abcd-unix-0")
        XCTAssertEqual(IBusAddress.filePath(["HOME": "/home/u", "XDG_CONFIG_HOME": "/cfg", "WAYLAND_DISPLAY": "w"], machineID: id),
                       "/cfg/ibus/bus/0123abcd-unix-w")
        XCTAssertEqual(IBusAddress.filePath(["HOME": "/home/u", "XDG_CONFIG_HOME": "relative", "WAYLAND_DISPLAY": "w"], machineID: id),
                       "/home/u/.config/ibus/bus/0123abcd-unix-w", "GLib ignores a relative XDG_CONFIG_HOME")
        XCTAssertEqual(IBusAddress.filePath(["IBUS_ADDRESS_FILE": "/x/file", "WAYLAND_DISPLAY": "w"], machineID: id), "/x/file")
    }

    func testTheAddressFileIsReadAsIBusWritesIt() throws {
        let contents = """
            # This file is created by ibus-daemon, please do not modify it.
            # If the IBUS_ADDRESS environment variable is set, it will
            # be used rather than this file.
            IBUS_ADDRESS=unix:abstract=/home/u/.cache/ibus/dbus-nI1t8OoB,guid=8b52291d5c00305b9607b1556b1518c1
            IBUS_DAEMON_PID=21222

            """
        let entry = try XCTUnwrap(IBusAddress.parse(contents))
        XCTAssertEqual(entry.address, "unix:abstract=/home/u/.cache/ibus/dbus-nI1t8OoB,guid=8b52291d5c00305b9607b1556b1518c1")
        XCTAssertEqual(entry.pid, 21222)
        XCTAssertNil(IBusAddress.parse("# nothing\nIBUS_DAEMON_PID=3\n"))
    }

    func testTheAddressIsUsedOnlyWhileItsDaemonLives() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ibus-address-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("address").path
        try "IBUS_ADDRESS=unix:path=/x\nIBUS_DAEMON_PID=\(getpid())\n".write(toFile: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(IBusAddress.find(["IBUS_ADDRESS_FILE": file]), "unix:path=/x")
        // A pid no process has (above the kernel's limit).
        try "IBUS_ADDRESS=unix:path=/x\nIBUS_DAEMON_PID=2147483646\n".write(toFile: file, atomically: true, encoding: .utf8)
        XCTAssertNil(IBusAddress.find(["IBUS_ADDRESS_FILE": file]), "its daemon is gone")
        XCTAssertEqual(IBusAddress.find(["IBUS_ADDRESS": "unix:path=/y", "IBUS_ADDRESS_FILE": file]), "unix:path=/y", "the variable wins")
        XCTAssertNil(IBusAddress.find(["IBUS_ADDRESS_FILE": directory.appendingPathComponent("none").path]))
    }

    // MARK: IBus's objects on its bus

    func testOurComponentEngineAndTextHaveIBusSerializableShapes() {
        XCTAssertEqual(IBusValues.component().type.signature, "(sa{sv}ssssssssavav)")
        XCTAssertEqual(IBusValues.engineDescription().type.signature, "(sa{sv}ssssssssussssssss)")
        XCTAssertEqual(IBusValues.text("東京 ✓").type.signature, "(sa{sv}sv)")
        XCTAssertEqual(IBusValues.string(ofText: .variant(IBusValues.text("Grüße"))), "Grüße")
        XCTAssertNil(IBusValues.string(ofText: .string("Grüße")))
        XCTAssertEqual(IBusValues.engineName(ofDescription: .variant(.variant(IBusValues.engineDescription()))), "voicebox")
        XCTAssertEqual(ObjectPath("/org/x").busValue, .objectPath("/org/x"))
        XCTAssertEqual(try ObjectPath(busValue: .objectPath("/a")), ObjectPath("/a"))
        XCTAssertThrowsError(try ObjectPath(busValue: .string("/a")))
    }

    // MARK: The field showing the text

    private func report(_ text: String, cursor: Int) -> EngineReport.Surrounding {
        .init(text: text, cursor: UInt32(cursor), anchor: UInt32(cursor))
    }

    func testTheTextBeforeTheCursorConfirmsTheCommit() {
        let text = "Grüße, naïve café — 東京 ✓"
        let field = "Before: " + text + " after"
        let characters = field.unicodeScalars.count - " after".unicodeScalars.count
        let bytes = field.utf8.count - " after".utf8.count
        XCTAssertTrue(SurroundingText.confirms(report(field, cursor: characters), committed: text), "the cursor in characters (IBus)")
        XCTAssertTrue(SurroundingText.confirms(report(field, cursor: bytes), committed: text), "in bytes (gnome-shell 43)")
        XCTAssertFalse(SurroundingText.confirms(report(field, cursor: characters - 1), committed: text))
        XCTAssertFalse(SurroundingText.confirms(report("Before: ", cursor: 8), committed: text), "not there")
        XCTAssertFalse(SurroundingText.confirms(report(field, cursor: 1000), committed: text), "a cursor past the end reads nothing")
    }

    func testAFieldThatReportsOnlyPartOfALongTextConfirmsWithItsTail() {
        let text = "First line of the dictation.\nSecond line, and the end."
        XCTAssertTrue(SurroundingText.confirms(report("Second line, and the end.", cursor: 25), committed: text),
                      "a text view reports its current paragraph")
        XCTAssertFalse(SurroundingText.confirms(report("end.", cursor: 4), committed: text), "four characters prove nothing")
        XCTAssertFalse(SurroundingText.confirms(report("Other line, and the end.", cursor: 24), committed: text))
        // A report cut to a window (4,000 bytes at most on Wayland) shows the tail of a longer text.
        let long = String(repeating: "Grüße — 東京 ✓ ", count: 300)
        let window = String(long.unicodeScalars.suffix(2_100))
        XCTAssertTrue(SurroundingText.confirms(report(window, cursor: 2_100), committed: long))
    }

    /// A field that refused part of the text (a length limit) and shows what it took, or its old
    /// text, which happens to end as ours does, does not show the text.
    func testAFieldThatRefusedTheRestIsNotTakenToShowIt() {
        XCTAssertFalse(SurroundingText.confirms(report("hahahahaha", cursor: 10), committed: "hahahahahahahahahaha"),
                       "ten of twenty taken")
        XCTAssertFalse(SurroundingText.confirms(report("helloworld", cursor: 0), committed: "Dear Sir,\n"),
                       "a one-line field's cursor at its start")
        XCTAssertTrue(SurroundingText.confirms(report("", cursor: 0), committed: "Dear Sir,\n"), "an empty line after the break")
    }

    /// A text view reports only the line its cursor is on: after a line break, that whole line is
    /// what the text put after its last break, however short (a dictation ending "new line" leaves
    /// an empty one).
    func testAFieldThatReportsOnlyItsCurrentLineConfirmsWithWhatFollowedTheLastBreak() {
        XCTAssertTrue(SurroundingText.confirms(report("ab", cursor: 2), committed: "hello world\nab"))
        XCTAssertTrue(SurroundingText.confirms(report("", cursor: 0), committed: "line one\n"))
        XCTAssertTrue(SurroundingText.confirms(report("", cursor: 0), committed: "a\n\n"))
        XCTAssertTrue(SurroundingText.confirms(report("Next", cursor: 4), committed: "dictated sentence.\n\nNext"))
        XCTAssertFalse(SurroundingText.confirms(report("xy", cursor: 2), committed: "hello world\nab"), "another line")
        XCTAssertFalse(SurroundingText.confirms(report("xab", cursor: 3), committed: "hello world\nab"), "the line began before our break")
        XCTAssertFalse(SurroundingText.confirms(report("zz\nab", cursor: 5), committed: "hello world\nab"),
                       "a field that reports more than its line must show the text")
        XCTAssertFalse(SurroundingText.confirms(report("ab", cursor: 2), committed: "hello world ab"), "no break: eight characters are needed")
    }

    // MARK: Compositions

    /// The composition the daemon committed at the switch is shown only when all of it is before
    /// the cursor: a field's tail that merely ends like it proves nothing.
    func testACommittedCompositionMustShowWhole() {
        let shown = EngineReport.Surrounding(text: "abc하", cursor: 4, anchor: 4)
        let lost = EngineReport.Surrounding(text: "", cursor: 0, anchor: 0)
        XCTAssertTrue(SurroundingText.confirms(shown, committed: "하", strictly: true))
        XCTAssertFalse(SurroundingText.confirms(lost, committed: "하", strictly: true))
        let tail = EngineReport.Surrounding(text: "서울, Seoul", cursor: 9, anchor: 9)
        XCTAssertFalse(SurroundingText.confirms(tail, committed: "하서울, Seoul"), "a short field that shows only a tail lost the rest")
        XCTAssertFalse(SurroundingText.confirms(tail, committed: "하서울, Seoul", strictly: true))
    }

    func testEachCompositionsModeIsReadFromTheDaemonsSignals() {
        var preedits: [String: CompositionWatch.Preedit] = [:]
        let context = "/org/freedesktop/IBus/InputContext_2"
        let deadKey: [DBusValue] = [.variant(IBusValues.text("´")), .uint32(1), .boolean(true), .uint32(0)]
        CompositionWatch.note("UpdatePreeditTextWithMode", path: context, deadKey, in: &preedits)
        XCTAssertEqual(preedits[context], .init(text: "´", visible: true, mode: 0))
        XCTAssertTrue(preedits[context]!.inProgress)
        XCTAssertFalse(preedits[context]!.survivesASwitch, "PREEDIT_CLEAR: a switch drops it")
        CompositionWatch.note("HidePreeditText", path: context, [], in: &preedits)
        XCTAssertFalse(preedits[context]!.inProgress)
        CompositionWatch.note("ShowPreeditText", path: context, [], in: &preedits)
        XCTAssertTrue(preedits[context]!.inProgress)
        let hangul: [DBusValue] = [.variant(IBusValues.text("하")), .uint32(1), .boolean(true), .uint32(1)]
        CompositionWatch.note("UpdatePreeditTextWithMode", path: context, hangul, in: &preedits)
        XCTAssertTrue(preedits[context]!.survivesASwitch, "PREEDIT_COMMIT: the daemon commits it on a switch")
        let plain: [DBusValue] = [.variant(IBusValues.text("ni")), .uint32(2), .boolean(true)]
        CompositionWatch.note("UpdatePreeditText", path: context, plain, in: &preedits)
        XCTAssertEqual(preedits[context], .init(text: "ni", visible: true, mode: nil), "no mode told: taken as dropped")
        XCTAssertFalse(preedits[context]!.survivesASwitch)
        CompositionWatch.note("UpdatePreeditText", path: context, [.variant(IBusValues.text("")), .uint32(0), .boolean(false)], in: &preedits)
        XCTAssertFalse(preedits[context]!.inProgress, "ended")
    }

    // MARK: The choice

    /// Pieces are bounded in UTF-8 bytes (libwayland's 4 KiB message), end between characters,
    /// and together are the text, whatever it is made of.
    func testPiecesAreBoundedInBytesAndMakeTheWholeText() {
        let pile = "e" + String(repeating: "\u{301}", count: 1_500)  // one character of 3,001 bytes
        for text in [String(repeating: "👩‍👩‍👧‍👦", count: 200), String(repeating: "ab東", count: 900), pile + "x", ""] {
            var rest = Substring.UnicodeScalarView(text.unicodeScalars), pieces: [String] = []
            while !rest.isEmpty { pieces.append(String(Substring(IBusTyper.nextPiece(&rest)))) }
            XCTAssertEqual(pieces.joined(), text)
            XCTAssertTrue(pieces.allSatisfy { $0.utf8.count <= IBusTyper.pieceBytes && !$0.isEmpty })
            if !text.unicodeScalars.elementsEqual(pile.unicodeScalars + ["x"]) { XCTAssertEqual(pieces.map(\.count).reduce(0, +), text.count, "split inside a character") }
        }
    }

    /// A compositor is asked what it offers on its socket: a sway-like one lists the virtual
    /// keyboard, mutter does not; no socket, no answer.
    func testTheCompositorsGlobalsAreRead() {
        var body: [UInt8] = []
        for word in [UInt32(7), UInt32(32)] { body += withUnsafeBytes(of: word) { Array($0) } }
        body += Array("zwp_virtual_keyboard_manager_v1".utf8) + [0]
        body += withUnsafeBytes(of: UInt32(1)) { Array($0) }
        XCTAssertEqual(WaylandGlobals.globalInterface(body[...]), "zwp_virtual_keyboard_manager_v1")
        XCTAssertNil(WaylandGlobals.list(["WAYLAND_DISPLAY": "no-such-display", "XDG_RUNTIME_DIR": "/nonexistent"]))
    }

    func testIBusIsChosenOnGnomeAndKDEWaylandBeforeYdotoolAndTheClipboard() throws {
        func plan(_ mode: InsertionMode, _ session: DesktopSession, typer: Typer? = nil, socket: Bool = false,
                  ibus: Bool) throws -> InsertionPlan {
            try InsertionPlan.choose(mode, text: "naïve", session: session, typer: typer, ydotoolSocket: socket, ibus: ibus)
        }
        XCTAssertEqual(try plan(.type, .gnomeOrKDE, ibus: true), .type(.ibus))
        XCTAssertEqual(try plan(.type, .gnomeOrKDE, socket: true, ibus: true), .type(.ibus), "before ydotool")
        XCTAssertEqual(try plan(.type, .gnomeOrKDE, socket: true, ibus: false), .paste(.wlClipboard, keys: .ydotool))
        XCTAssertEqual(try plan(.type, .gnomeOrKDE, ibus: false), .clipboardForHand(.wlClipboard))
        XCTAssertEqual(try plan(.type, .wlroots, ibus: true), .type(.wtype), "wlroots has a virtual keyboard")
        XCTAssertEqual(try plan(.type, .x11, ibus: true), .type(.xdotool))
        XCTAssertEqual(try plan(.type, .x11, typer: .ibus, ibus: true), .type(.ibus), "--typer ibus forces it")
        XCTAssertEqual(try plan(.paste, .gnomeOrKDE, ibus: true), .clipboardForHand(.wlClipboard), "IBus presses no paste keys")
        XCTAssertThrowsError(try plan(.paste, .x11, typer: .ibus, ibus: true))
        XCTAssertEqual(try plan(.clipboard, .gnomeOrKDE, ibus: true), .clipboard(.wlClipboard))
    }

    func testTheRouteSaysWhatItChoseAndWhy() async throws {
        // A GNOME Wayland session whose IBus does not answer (nothing listens at the address).
        let gnome = ["WAYLAND_DISPLAY": "wayland-0", "XDG_CURRENT_DESKTOP": "GNOME", "IBUS_ADDRESS": "unix:path=/nonexistent/ibus",
                     "PATH": "/usr/bin:/bin"]
        let route = try await InsertionRoute.choose(.type, typer: nil, environment: gnome)
        XCTAssertEqual(route.name, "clipboard")
        XCTAssertTrue(route.description.contains("no IBus daemon answers"), route.description)
        let x11 = try await InsertionRoute.choose(.type, typer: nil, environment: ["DISPLAY": ":5"])
        XCTAssertEqual(x11.description, "typed with xdotool (X11)")
        let forced = try await InsertionRoute.choose(.type, typer: .ibus, environment: ["DISPLAY": ":5", "IBUS_ADDRESS": "unix:path=/nonexistent"])
        XCTAssertEqual(forced.description, "typed through IBus (--typer ibus), but no IBus daemon answers in this session")
    }

    // MARK: The command line

    func testTyperIBusAndVerboseAreUnderstood() throws {
        XCTAssertEqual(try Invocation.parse(["insert", "--typer", "ibus", "--verbose", "x"]).command,
                       .insert(InsertRequest(text: "x", typer: .ibus, verbose: true)))
        XCTAssertThrowsError(try Invocation.parse(["insert", "--output", "paste", "--typer", "ibus", "x"])) { error in
            XCTAssertEqual((error as? UsageError)?.description, "--typer ibus types text and presses no keys: it cannot --output paste")
        }
        guard case .dictate(let request) = try Invocation.parse(["dictate", "--verbose", "--typer", "ibus"]).command else {
            return XCTFail("not dictate")
        }
        XCTAssertTrue(request.verbose)
        XCTAssertEqual(request.typer, .ibus)
        XCTAssertThrowsError(try Invocation.parse(["dictate", "--typer", "ibus", "--output", "paste"]))
    }
}
