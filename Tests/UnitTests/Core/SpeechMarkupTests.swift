import VoiceboxCore
import XCTest

/// What the output module is given: our marks before words, the caller's marks renamed, offsets in
/// the caller's characters, and marks moved before a full stop only where espeak-ng drops them.
final class SpeechMarkupTests: XCTestCase {
    func testPlainTextIsEscapedAndEveryWordMarkedWithItsSentence() {
        let markup = SpeechMarkup(plain: "Tom & Jerry <3.\nThey run!")
        XCTAssertEqual(markup.document, "<speak><mark name=\"vb0\"/>Tom <mark name=\"vb1\"/>&amp; <mark name=\"vb2\"/>Jerry "
                       + "<mark name=\"vb3\"/>&lt;3<mark name=\"vb4\"/>. They <mark name=\"vb5\"/>run!</speak>")
        XCTAssertEqual(markup.marks, [
            .word(.init(0, 3), sentence: .init(0, 15)), .word(.init(4, 5), sentence: nil), .word(.init(6, 11), sentence: nil),
            .word(.init(12, 15), sentence: nil), .word(.init(16, 20), sentence: .init(16, 25)), .word(.init(21, 25), sentence: nil),
        ])
        XCTAssertFalse(markup.document.contains("\n"), "a line break would be a line of the module protocol")
    }

    /// espeak-ng 1.51 drops a mark after a full stop that is one (the next word not in lower case):
    /// there the mark goes before the `.`; before a word in lower case, or after `!`, it stays.
    func testAMarkAfterAFullStopGoesBeforeTheStop() {
        XCTAssertEqual(SpeechMarkup(plain: "It is now. Then.").document,
                       "<speak><mark name=\"vb0\"/>It <mark name=\"vb1\"/>is <mark name=\"vb2\"/>now<mark name=\"vb3\"/>. Then.</speak>")
        XCTAssertEqual(SpeechMarkup(plain: "Dr. smith").document, "<speak><mark name=\"vb0\"/>Dr. <mark name=\"vb1\"/>smith</speak>")
        XCTAssertEqual(SpeechMarkup(plain: "Now! Then").document, "<speak><mark name=\"vb0\"/>Now! <mark name=\"vb1\"/>Then</speak>")
        XCTAssertEqual(SpeechMarkup(plain: "said \"now.\" 3 more").document,
                       "<speak><mark name=\"vb0\"/>said <mark name=\"vb1\"/>\"now<mark name=\"vb2\"/>.\" 3 <mark name=\"vb3\"/>more</speak>")
    }

    func testSSMLKeepsItsMarkupRenamesTheCallersMarksAndCountsItsCharacters() throws {
        let text = "Café <mark name='x'/>au <emphasis>lait</emphasis>. <say-as interpret-as=\"characters\">abc</say-as>"
            + "<!-- a comment --> <s>Fin</s>"
        XCTAssertThrowsError(try SSMLDocument(text), "a mark name in single quotes is refused")
        let accepted = text.replacingOccurrences(of: "'x'", with: "\"x\"")
        let markup = SpeechMarkup(ssml: try SSMLDocument(accepted), callerText: accepted)
        XCTAssertEqual(markup.document, "<speak><mark name=\"vb0\"/>Café <mark name=\"vb1\"/><mark name=\"vb2\"/>au "
                       + "<emphasis><mark name=\"vb3\"/>lait</emphasis>. <say-as interpret-as=\"characters\">abc</say-as> "
                       + "<s><mark name=\"vb4\"/>Fin</s></speak>")
        XCTAssertEqual(markup.marks[1], .caller(name: "x", at: 5))
        // "lait" is a word of its own between tags; the "." after </emphasis> says nothing and gets no
        // mark; "abc" is spelled by say-as and gets none; <s> begins a sentence.
        XCTAssertEqual(markup.marks[3], .word(.init(34, 38), sentence: nil))
        XCTAssertEqual(markup.marks[4], .word(.init(119, 122), sentence: .init(119, 122)))
        XCTAssertEqual(markup.mark(named: "vb1"), .caller(name: "x", at: 5))
        XCTAssertNil(markup.mark(named: "vb99"))
        XCTAssertNil(markup.mark(named: "x"))
    }

    func testAWholeDocumentKeepsItsOffsetsAndAFragmentIsCountedWithoutTheWrapper() throws {
        let whole = "<speak>Hi</speak>", fragment = "Hi"
        XCTAssertEqual(SpeechMarkup(ssml: try SSMLDocument(whole), callerText: whole).marks, [.word(.init(7, 9), sentence: .init(7, 9))])
        XCTAssertEqual(SpeechMarkup(ssml: try SSMLDocument(fragment), callerText: fragment).marks,
                       [.word(.init(0, 2), sentence: .init(0, 2))])
    }
}
