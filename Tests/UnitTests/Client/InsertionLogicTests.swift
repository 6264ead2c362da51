@testable import TestSupport
import Foundation
@testable import VoiceboxInsertion
import XCTest
@testable import voicebox

/// What insertion decides before any program runs: how long text is split, which keys paste,
/// which characters the X layout lacks and where they are bound, what sway and xprop say.
final class InsertionLogicTests: XCTestCase {
    static let sentence = "Café déjà vu — naïve façade, 100 % €"
    static let mixed = "Ελληνικά κόσμε, Привет мир, 日本語 😀 ± § © → ≠ ok"

    // MARK: Long text

    func testLongTextIsSplitAtSentenceEnds() {
        XCTAssertEqual(LongText.split("Short text."), ["Short text."])
        XCTAssertEqual(LongText.split("One. Two. Three.", limit: 10), ["One. Two.", "Three."])
        XCTAssertEqual(LongText.split("Is it? Yes! Fine.", limit: 12), ["Is it? Yes!", "Fine."])
        XCTAssertEqual(LongText.split("A sentence with no end at all", limit: 12), ["A sentence", "with no end", "at all"],
                       "a sentence longer than the limit breaks at a space")
        XCTAssertEqual(LongText.split("abcdefghij", limit: 4), ["abcd", "efgh", "ij"], "a word longer than the limit, at a character")
        XCTAssertEqual(LongText.split("ééééé", limit: 4), ["éé", "éé", "é"], "never inside a character's bytes")
        XCTAssertEqual(LongText.split("He said \"stop.\" Then left.", limit: 20), ["He said \"stop.\"", "Then left."])
        XCTAssertEqual(LongText.split("第一句。第二句。", limit: 15), ["第一句。", "第二句。"])
        XCTAssertEqual(LongText.split("Line one\nline two", limit: 12), ["Line one", "line two"])
    }

    func testTheSplitKeepsEveryWordInOrderWithinTheLimit() {
        let sentence = "Voicebox speaks every sentence of this text, in order, and nothing is lost. "
        let text = String(repeating: sentence, count: 2000)  // about 150 KB
        let pieces = LongText.split(text)
        XCTAssertGreaterThan(pieces.count, 2)
        XCTAssertTrue(pieces.allSatisfy { $0.utf8.count <= LongText.limit })
        XCTAssertTrue(pieces.allSatisfy { $0.hasSuffix("lost.") }, "each ends at a sentence end")
        XCTAssertEqual(pieces.joined(separator: " ").split(separator: " "), text.split(separator: " "))
    }

    // MARK: Paste keys

    func testPasteKeysByWindowClass() {
        XCTAssertEqual(PasteKeys.forWindow("xterm"), .shiftInsert)
        XCTAssertEqual(PasteKeys.forWindow("URxvt"), .shiftInsert)
        XCTAssertEqual(PasteKeys.forWindow("foot"), .ctrlShiftV)
        XCTAssertEqual(PasteKeys.forWindow("Lxterminal"), .ctrlShiftV)
        XCTAssertEqual(PasteKeys.forWindow("gnome-terminal-server"), .ctrlShiftV)
        XCTAssertEqual(PasteKeys.forWindow("kitty"), .ctrlShiftV)
        XCTAssertEqual(PasteKeys.forWindow("org.gnome.Console"), .ctrlShiftV)
        XCTAssertEqual(PasteKeys.forWindow("firefox"), .ctrlV)
        XCTAssertEqual(PasteKeys.forWindow(nil), .ctrlV)
        XCTAssertEqual(FocusedWindow(id: "1", classes: ["xterm", "xterm"]).pasteKeys, .shiftInsert)
        XCTAssertEqual(FocusedWindow(id: "1", classes: ["gedit", "org.gnome.gedit"]).pasteKeys, .ctrlV)
        XCTAssertTrue(PasteKeys.shiftInsert.pastesPrimary)
        XCTAssertFalse(PasteKeys.ctrlShiftV.pastesPrimary)
    }

    func testPasteKeysSpelledForEachProgram() {
        XCTAssertEqual(PasteKeys("Control+Shift+V"), .ctrlShiftV)
        XCTAssertEqual(PasteKeys("shift+Insert"), .shiftInsert)
        XCTAssertNil(PasteKeys("ctrl+ctrl+v"))
        XCTAssertNil(PasteKeys(""))
        XCTAssertEqual(PasteKeys.ctrlShiftV.xdotool, "ctrl+shift+v")
        XCTAssertEqual(PasteKeys.ctrlShiftV.wtype, ["-M", "ctrl", "-M", "shift", "-k", "v", "-m", "shift", "-m", "ctrl"])
        XCTAssertEqual(PasteKeys.shiftInsert.ydotool, ["42:1", "110:1", "110:0", "42:0"])
        XCTAssertEqual(PasteKeys.ctrlV.ydotool, ["29:1", "47:1", "47:0", "29:0"])
    }

    // MARK: X11's keyboard map

    static let usTable = """
        There are 7 KeySyms per KeyCode; KeyCodes range from 8 to 255.

            KeyCode\tKeysym (Keysym)\t...
            Value  \tValue   (Name) \t...

              8    \t
             24    \t0x0071 (q)\t0x0051 (Q)\t0x0071 (q)\t0x0051 (Q)\t
             26    \t0x0065 (e)\t0x0045 (E)\t0x0065 (e)\t0x0045 (E)\t
             65    \t0x0020 (space)\t0x0000 (NoSymbol)\t0x0020 (space)\t
             93    \t
             97    \t
        """

    func testTheMapsSpareKeycodesAndKeysyms() {
        let map = XKeymap.parse(Self.usTable)
        XCTAssertEqual(map.spare, [8, 93, 97])
        XCTAssertEqual(map.present, [0x71, 0x51, 0x65, 0x45, 0x20])
        XCTAssertEqual(XKeymap.missing("qé eα é", in: map), ["é", "α"], "each once, in order; the layout's own left out")
        XCTAssertEqual(XKeymap.keysyms("é"), [0x10000E9, 0xE9])
        XCTAssertTrue(XKeymap.keysyms("€").contains(0x20AC), "EuroSign, as the French layout has it")
        XCTAssertEqual(XKeymap.boundKeysym("α"), 0x10003B1)
        XCTAssertEqual(XKeymap.boundKeysym("é"), 0xE9)
    }

    func testMissingCharactersAreBoundTwoToASpareKeycodeBeforeTyping() {
        let map = XKeymap.parse(Self.usTable)
        let parts = XKeymap.plan("qé α", map: map)
        XCTAssertEqual(parts.count, 1)
        XCTAssertEqual(parts[0].text, "qé α")
        XCTAssertEqual(parts[0].bindings, [.init(keycode: 8, scalars: ["é", "α"])])
        XCTAssertEqual(XKeymap.expressions(parts[0].bindings), ["-e", "keycode 8 = U00E9 U03B1"])
        XCTAssertEqual(XKeymap.expressions([.init(keycode: 93, scalars: ["😀"])]), ["-e", "keycode 93 = U1F600 U1F600"])
        XCTAssertEqual(Xdotool.keysyms("qé α\n", map: map, bindings: parts[0].bindings),
                       ["0x71", "0xe9", "0x20", "0x10003b1", "Return"])
        XCTAssertEqual(XKeymap.plan("qe q", map: map).map(\.bindings), [[]], "nothing missing: nothing bound")
    }

    func testMoreMissingCharactersThanRoomAreTypedInParts() {
        let map = XKeymap.parse(Self.usTable)  // 3 spare keycodes: 6 characters a part
        let parts = XKeymap.plan("абвгдежзи", map: map)
        XCTAssertEqual(parts.map(\.text), ["абвгде", "жзи"])
        XCTAssertEqual(parts[1].bindings, [.init(keycode: 8, scalars: ["ж", "з"]), .init(keycode: 93, scalars: ["и"])])
        XCTAssertEqual(parts.map(\.text).joined(), "абвгдежзи")
    }

    func testTheCorpusOnAnXvfbUSLayout() {
        // Xvfb's US layout leaves 19 keycodes spare: both test texts fit one part.
        var table = Self.usTable
        for keycode in 200..<216 { table += "\n \(keycode)    \t" }
        let map = XKeymap.parse(table)
        for text in [Self.sentence, Self.mixed] {
            let parts = XKeymap.plan(text, map: map)
            XCTAssertEqual(parts.map(\.text).joined(), text)
            let bound = Set(parts.flatMap { $0.bindings.flatMap(\.scalars) })
            XCTAssertEqual(bound, Set(XKeymap.missing(text, in: map)))
        }
    }

    // MARK: Focus

    func testWMClassAndSwaysTree() {
        XCTAssertEqual(FocusedWindow.parseWMClass("WM_CLASS(STRING) = \"xterm\", \"XTerm\"\n"), ["xterm", "xterm"])
        XCTAssertEqual(FocusedWindow.parseWMClass("WM_CLASS:  not found.\n"), [])
        let tree = """
            {"id": 1, "type": "root", "focused": false, "nodes": [{"id": 3, "type": "output", "focused": false, "nodes": [
              {"id": 4, "type": "workspace", "focused": false, "nodes": [
                {"id": 7, "type": "con", "focused": false, "app_id": "firefox", "nodes": []},
                {"id": 9, "type": "con", "focused": true, "app_id": "foot", "nodes": []}]}]}]}
            """
        XCTAssertEqual(FocusedWindow.parseSwayTree(Array(tree.utf8)), FocusedWindow(id: "9", classes: ["foot"]))
        XCTAssertEqual(FocusedWindow.parseSwayTree(Array(tree.utf8))?.pasteKeys, .ctrlShiftV)
        let xwayland = """
            {"id": 1, "type": "root", "focused": false, "nodes": [], "floating_nodes": [
              {"id": 5, "type": "floating_con", "focused": true, "app_id": null, "window_properties": {"class": "XTerm", "instance": "xterm"}}]}
            """
        XCTAssertEqual(FocusedWindow.parseSwayTree(Array(xwayland.utf8))?.pasteKeys, .shiftInsert)
        XCTAssertNil(FocusedWindow.parseSwayTree(Array("{\"id\": 1, \"type\": \"workspace\", \"focused\": true}".utf8)),
                     "an empty workspace has the focus: no window")
    }

    // MARK: ydotool

    func testYdotoolTypesOnlyWhatAUSKeyboardHasAndPastesTheRest() throws {
        for text in [Self.sentence, Self.mixed] {
            XCTAssertFalse(Ydotool.canType(text))
            XCTAssertEqual(try InsertionPlan.choose(.type, text: text, session: .gnomeOrKDE, typer: nil, ydotoolSocket: true),
                           .paste(.wlClipboard, keys: .ydotool))
            // What it could type of the corpus, it types with the right key and shift.
            for scalar in text.unicodeScalars where scalar.isASCII {
                XCTAssertNotNil(Ydotool.usKey(scalar), "\(scalar)")
            }
        }
        XCTAssertEqual(Ydotool.usKey("a")?.code, 30)
        XCTAssertEqual(Ydotool.usKey("A")?.shift, true)
        XCTAssertEqual(Ydotool.usKey("%")?.code, 6)
        XCTAssertEqual(Ydotool.usKey(",")?.code, 51)
        XCTAssertNil(Ydotool.usKey("é"))
        XCTAssertTrue(Ydotool.canType("go forward, 100 %!\n"))
        XCTAssertEqual(try InsertionPlan.choose(.type, text: "go forward", session: .gnomeOrKDE, typer: nil, ydotoolSocket: true),
                       .type(.ydotool))
    }
}
