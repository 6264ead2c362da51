import XCTest
@testable import VoiceboxBus
@testable import VoiceboxContract
@testable import VoiceboxInsertion
import VoiceboxThreads

/// What the panel-extension way of typing reads from IBus's bus (IBusExtensionCommit).
final class IBusExtensionLogicTests: XCTestCase {
    private let field = "/org/freedesktop/IBus/InputContext_2"
    private let other = "/org/freedesktop/IBus/InputContext_3"

    private func surrounding(_ text: String, cursor: Int, context: String? = nil) -> IBusExtensionCommit.Event {
        .surrounding(context: context ?? field, .init(text: text, cursor: UInt32(cursor), anchor: UInt32(cursor)))
    }

    func testTheFieldsTextMustShowWhatWasSent() {
        let sent = "Grüße, naïve café"
        typealias Commit = IBusExtensionCommit
        XCTAssertEqual(Commit.verdict(sent, context: field, in: []), .waiting)
        XCTAssertEqual(Commit.verdict(sent, context: field, in: [surrounding("x " + sent, cursor: 19)]), .shown)
        // A report made before the commit landed, then the one that shows it.
        XCTAssertEqual(Commit.verdict(sent, context: field, in: [surrounding("x ", cursor: 2), surrounding("x " + sent, cursor: 19)]), .shown)
        // A field that reports its text must show it: its cursor moving is not enough.
        XCTAssertEqual(Commit.verdict(sent, context: field, in: [surrounding("x ", cursor: 2), .cursor(context: field)]), .waiting)
        // One that reported its text for an earlier piece must show this one too.
        XCTAssertEqual(Commit.verdict(sent, context: field, in: [.cursor(context: field)], reportsText: true), .waiting)
        // One that reports no text: its cursor moving after the commit is.
        XCTAssertEqual(Commit.verdict(sent, context: field, in: [.cursor(context: field)]), .reported)
        // Another context's reports say nothing of this field.
        XCTAssertEqual(Commit.verdict(sent, context: field, in: [.cursor(context: other), surrounding(sent, cursor: 17, context: other)]),
                       .waiting)
    }

    func testClosingLineBreaksAreAPieceOfTheirOwn() {
        XCTAssertEqual(IBusExtensionCommit.pieces(of: "Dear Sir,\n"), ["Dear Sir,", "\n"])
        XCTAssertEqual(IBusExtensionCommit.pieces(of: "a\r\n\n"), ["a", "\r\n\n"])
        XCTAssertEqual(IBusExtensionCommit.pieces(of: "one\ntwo"), ["one\ntwo"])
        XCTAssertEqual(IBusExtensionCommit.pieces(of: "\n"), ["\n"])
        XCTAssertEqual(IBusExtensionCommit.pieces(of: ""), [])
        let long = String(repeating: "東京 ", count: 1_000) + "\n"
        XCTAssertEqual(IBusExtensionCommit.pieces(of: long).joined(), long)
        XCTAssertEqual(IBusExtensionCommit.pieces(of: long).last, "\n")
        // A piece that would end in a line break gives it to the next one.
        let broken = String(repeating: "x", count: 1_999) + "\ntail"
        let pieces = IBusExtensionCommit.pieces(of: broken)
        XCTAssertEqual(pieces, [String(repeating: "x", count: 1_999), "\ntail"])
        XCTAssertEqual(IBusExtensionCommit.pieces(of: String(repeating: "y", count: 1_998) + "\r\nmore"),
                       [String(repeating: "y", count: 1_998), "\r\nmore"])
    }

    /// After the text before them was shown, closing line breaks show as the cursor at the start
    /// of a line that changed (a text view with text after the cursor); a field where the focus
    /// moved meanwhile shows nothing.
    func testClosingLineBreaksShowAsTheCursorAtTheStartOfAChangedLine() {
        typealias Commit = IBusExtensionCommit
        let before = EngineReport.Surrounding(text: "Dear Sir,Regards", cursor: 9, anchor: 9)
        XCTAssertEqual(Commit.verdict("Dear Sir,\n", context: field, in: [surrounding("Regards", cursor: 0)], reportsText: true,
                                      baseline: before), .shown)
        XCTAssertEqual(Commit.verdict("Dear Sir,\r\n", context: field, in: [surrounding("Regards", cursor: 0)], reportsText: true,
                                      baseline: before), .shown, "CRLF: one character, two scalars")
        XCTAssertEqual(Commit.verdict("Dear Sir,\n", context: field, in: [surrounding("Dear Sir,Regards", cursor: 9)], reportsText: true,
                                      baseline: before), .waiting, "unchanged: the break was refused")
        XCTAssertEqual(Commit.verdict("Dear Sir,\n", context: field, in: [surrounding("Regards", cursor: 0)], reportsText: true), .waiting,
                       "no report of the text before the break to compare with")
        XCTAssertEqual(Commit.verdict("x", context: field, in: [.clientFocus(context: field), surrounding("x", cursor: 1)]), .focusMoved)
    }

    func testAPieceCountsAsHandedOnOnlyToTheFocusedContextAfterItWasSent() {
        let events: [IBusExtensionCommit.Event] = [
            .committed(context: field, text: "eins"),  // before this piece was sent
            .committed(context: other, text: "zwei"),
            .committed(context: field, text: "zwei"),
        ]
        XCTAssertNil(IBusExtensionCommit.handedOn("eins", to: field, in: events, from: 1))
        XCTAssertEqual(IBusExtensionCommit.handedOn("zwei", to: field, in: events, from: 1), 2)
        XCTAssertNil(IBusExtensionCommit.handedOn("zwei ", to: field, in: events, from: 0), "exactly the piece")
    }

    func testTheFocusIsTheDaemonsLastWord() {
        let events = Locked<[IBusExtensionCommit.Event]>([])
        XCTAssertNil(IBusExtensionCommit.focusedContext(events))
        events.withLock { $0 = [.focusIn(context: field), .cursor(context: field)] }
        XCTAssertEqual(IBusExtensionCommit.focusedContext(events), field)
        events.withLock { $0.append(.focusOut(context: field)) }
        XCTAssertNil(IBusExtensionCommit.focusedContext(events))
        events.withLock { $0.append(.focusIn(context: other)) }
        XCTAssertEqual(IBusExtensionCommit.focusedContext(events), other)
    }

    func testTheClientsReportsAreReadFromItsCalls() {
        func call(_ member: String, _ arguments: [DBusValue]) -> Signal {
            Signal(sender: ":1.3", path: field, interface: "org.freedesktop.IBus.InputContext", member: member, arguments: arguments)
        }
        XCTAssertEqual(IBusExtensionCommit.clientReport(call("SetSurroundingText", [.variant(IBusValues.text("東京")), .uint32(6), .uint32(6)])),
                       surrounding("東京", cursor: 6))
        XCTAssertEqual(IBusExtensionCommit.clientReport(call("SetCursorLocation", [.int32(1), .int32(2), .int32(0), .int32(20)])),
                       .cursor(context: field))
        XCTAssertNil(IBusExtensionCommit.clientReport(call("ProcessKeyEvent", [.uint32(0x65), .uint32(18), .uint32(0)])))
        XCTAssertNil(IBusExtensionCommit.clientReport(call("SetSurroundingText", [.string("not an IBusText"), .uint32(0), .uint32(0)])))
    }

    func testAWatchedCallIsAskedOfTheBusAsSuch() {
        XCTAssertEqual(SignalFilter(.methodCall, interface: "org.freedesktop.IBus.InputContext").matchRule,
                       "type='method_call',interface='org.freedesktop.IBus.InputContext'")
        XCTAssertEqual(SignalFilter(sender: "org.freedesktop.IBus", member: "CommitText").matchRule,
                       "type='signal',sender='org.freedesktop.IBus',member='CommitText'")
    }
}
