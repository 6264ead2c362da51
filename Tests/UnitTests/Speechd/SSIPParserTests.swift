@testable import TestSupport
import XCTest
@testable import VoiceboxSpeechd

/// The SSIP parser over transcripts recorded from speech-dispatcher 0.11.4 (python, raw socket).
final class SSIPParserTests: XCTestCase {
    /// Recorded: CLIENT_NAME, CLIENT_ID, NOTIFICATION, GET, SPEAK with its begin, STOP, CANCEL, an
    /// unknown command, an SSML message with a mark, end, LIST OUTPUT_MODULES, QUIT.
    static let session = "208 OK CLIENT NAME SET\r\n"
        + "245-2\r\n245 OK CLIENT ID SENT\r\n"
        + "220 OK NOTIFICATION SET\r\n"
        + "251-espeak-ng\r\n251 OK GET RETURNED\r\n"
        + "230 OK RECEIVING DATA\r\n"
        + "225-2\r\n225 OK MESSAGE QUEUED\r\n701-2\r\n701-2\r\n701 BEGIN\r\n"
        + "210 OK STOPPED\r\n703-2\r\n703-2\r\n703 CANCELED\r\n701-3\r\n701-2\r\n701 BEGIN\r\n"
        + "703-4\r\n703-2\r\n703 CANCELED\r\n213 OK CANCELED\r\n"
        + "500 ERR INVALID COMMAND\r\n"
        + "225-5\r\n225 OK MESSAGE QUEUED\r\n701-5\r\n701-2\r\n701 BEGIN\r\n700-5\r\n700-2\r\n700-one\r\n"
        + "700 INDEX MARK\r\n704-5\r\n704-2\r\n704 PAUSED\r\n705-5\r\n705-2\r\n705 RESUMED\r\n702-5\r\n702-2\r\n702 END\r\n"
        + "250-espeak-ng\r\n250 OK MODULE LIST SENT\r\n"
        + "231 HAPPY HACKING\r\n"

    static let expected: [SSIPMessage] = [
        .reply(.init(code: 208, lines: [], text: "OK CLIENT NAME SET")),
        .reply(.init(code: 245, lines: ["2"], text: "OK CLIENT ID SENT")),
        .reply(.init(code: 220, lines: [], text: "OK NOTIFICATION SET")),
        .reply(.init(code: 251, lines: ["espeak-ng"], text: "OK GET RETURNED")),
        .reply(.init(code: 230, lines: [], text: "OK RECEIVING DATA")),
        .reply(.init(code: 225, lines: ["2"], text: "OK MESSAGE QUEUED")),
        .event(.init(kind: .begin, messageID: 2, clientID: 2)),
        .reply(.init(code: 210, lines: [], text: "OK STOPPED")),
        .event(.init(kind: .cancel, messageID: 2, clientID: 2)),
        .event(.init(kind: .begin, messageID: 3, clientID: 2)),
        .event(.init(kind: .cancel, messageID: 4, clientID: 2)),
        .reply(.init(code: 213, lines: [], text: "OK CANCELED")),
        .reply(.init(code: 500, lines: [], text: "ERR INVALID COMMAND")),
        .reply(.init(code: 225, lines: ["5"], text: "OK MESSAGE QUEUED")),
        .event(.init(kind: .begin, messageID: 5, clientID: 2)),
        .event(.init(kind: .mark("one"), messageID: 5, clientID: 2)),
        .event(.init(kind: .pause, messageID: 5, clientID: 2)),
        .event(.init(kind: .resume, messageID: 5, clientID: 2)),
        .event(.init(kind: .end, messageID: 5, clientID: 2)),
        .reply(.init(code: 250, lines: ["espeak-ng"], text: "OK MODULE LIST SENT")),
        .reply(.init(code: 231, lines: [], text: "HAPPY HACKING")),
    ]

    func testWholeTranscriptInOneChunk() throws {
        var parser = SSIPParser()
        XCTAssertEqual(try parser.feed(Array(Self.session.utf8)), Self.expected)
        XCTAssertFalse(parser.isMidMessage)
    }

    func testSplitAtEveryPosition() throws {
        let bytes = Array(Self.session.utf8)
        for split in 0...bytes.count {
            var parser = SSIPParser()
            let messages = try parser.feed(bytes[..<split]) + parser.feed(bytes[split...])
            XCTAssertEqual(messages, Self.expected, "split at \(split)")
        }
    }

    func testByteByByte() throws {
        var parser = SSIPParser()
        var messages: [SSIPMessage] = []
        for byte in Self.session.utf8 { messages += try parser.feed([byte]) }
        XCTAssertEqual(messages, Self.expected)
    }

    func testErrorCodesAreRepliesThatAreNotSuccess() throws {
        var parser = SSIPParser()
        let replies = try parser.feed(Array("301 ERR CANT REPORT\r\n409 ERR RATE TOO HIGH\r\n510 ERR NOT IMPLEMENTED\r\n".utf8))
        XCTAssertEqual(replies.count, 3)
        for case .reply(let reply) in replies { XCTAssertFalse(reply.isSuccess, "\(reply.code)") }
        XCTAssertEqual(replies.first, .reply(.init(code: 301, lines: [], text: "ERR CANT REPORT")))
    }

    /// `LIST SYNTHESIS_VOICES` of espeak-ng: thousands of data lines, UTF-8 names, events in between.
    func testMultiLineVoiceListWithEventsAround() throws {
        var text = "702-9\r\n702-3\r\n702 END\r\n"
        for index in 0..<3000 { text += "249-Voice \(index) (Français)+Ünïcode\tfr-FR\tvariant\(index)\r\n" }
        text += "249 OK VOICE LIST SENT\r\n701-10\r\n701-3\r\n701 BEGIN\r\n"
        let bytes = Array(text.utf8)
        var parser = SSIPParser()
        var messages: [SSIPMessage] = []
        var offset = 0
        while offset < bytes.count { // odd chunk sizes, across UTF-8 sequences
            let end = min(bytes.count, offset + 997)
            messages += try parser.feed(bytes[offset..<end])
            offset = end
        }
        XCTAssertEqual(messages.count, 3)
        XCTAssertEqual(messages[0], .event(.init(kind: .end, messageID: 9, clientID: 3)))
        guard case .reply(let list) = messages[1] else { return XCTFail("no reply") }
        XCTAssertEqual(list.code, 249)
        XCTAssertEqual(list.lines.count, 3000)
        XCTAssertEqual(list.lines[42], "Voice 42 (Français)+Ünïcode\tfr-FR\tvariant42")
        XCTAssertEqual(messages[2], .event(.init(kind: .begin, messageID: 10, clientID: 3)))
    }

    func testAReplyCutShortIsStillPending() throws {
        var parser = SSIPParser()
        XCTAssertEqual(try parser.feed(Array("249-Voice\ten\tnone\r\n249-Oth".utf8)), [])
        XCTAssertTrue(parser.isMidMessage)
    }

    func testMalformedLinesThrow() {
        for bad in ["hello\r\n", "12\r\n", "2x5 OK\r\n", "225_OK\r\n", "225-1\r\n226 OK\r\n", "701-x\r\n701-2\r\n701 BEGIN\r\n",
                    "700-1\r\n700-2\r\n700 INDEX MARK\r\n"] {
            var parser = SSIPParser()
            XCTAssertThrowsError(try parser.feed(Array(bad.utf8)), bad)
        }
    }

    func testUnknownNotificationIsSkipped() throws {
        var parser = SSIPParser()
        XCTAssertEqual(try parser.feed(Array("706-1\r\n706-2\r\n706 SOMETHING\r\n200 OK\r\n".utf8)),
                       [.reply(.init(code: 200, lines: [], text: "OK"))])
    }
}
