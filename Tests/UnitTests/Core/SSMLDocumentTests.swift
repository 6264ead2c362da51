@testable import TestSupport
import XCTest
@testable import VoiceboxCore

/// What SSML is let through to speech-dispatcher, and what is refused with which reason.
final class SSMLDocumentTests: XCTestCase {
    private func refusal(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> String? {
        do {
            _ = try SSMLDocument(text)
            return nil
        } catch {
            XCTAssertEqual(error.kind, .invalidArgument, file: file, line: line)
            return error.message
        }
    }

    private func assertRefused(_ text: String, _ reason: String, file: StaticString = #filePath, line: UInt = #line) {
        guard let message = refusal(text, file: file, line: line) else {
            return XCTFail("accepted: \(text.debugDescription)", file: file, line: line)
        }
        XCTAssertTrue(message.contains(reason), "'\(message)' does not say '\(reason)'", file: file, line: line)
    }

    func testWrappedInSpeakOnlyWhenItIsNotADocument() throws {
        XCTAssertEqual(try SSMLDocument("Hi <mark name=\"a\"/>").text, "<speak>Hi <mark name=\"a\"/></speak>")
        XCTAssertEqual(try SSMLDocument("<speak>Hi</speak>").text, "<speak>Hi</speak>")
        XCTAssertEqual(try SSMLDocument("  <speak version=\"1.0\">Hi</speak>").text, "  <speak version=\"1.0\">Hi</speak>")
        XCTAssertEqual(try SSMLDocument("<?xml version=\"1.0\"?>\n<speak>Hi</speak>").text, "<?xml version=\"1.0\"?>\n<speak>Hi</speak>")
        XCTAssertEqual(try SSMLDocument("<p>one</p><p>two</p>").text, "<speak><p>one</p><p>two</p></speak>")
        XCTAssertEqual(try SSMLDocument("<!-- c --> <speak>Hi</speak>").text, "<!-- c --> <speak>Hi</speak>")
    }

    func testOrdinarySSMLPasses() throws {
        let document = try SSMLDocument("""
            <?xml version="1.0" encoding="UTF-8"?>
            <!-- a comment -->
            <speak version="1.1" xmlns="http://www.w3.org/2001/10/synthesis" xml:lang="en-US">
              <p><s>Hello <emphasis level='strong'>there</emphasis>, <say-as interpret-as="characters">SSML</say-as>.</s></p>
              <mark name="chapter_1"/><break time="500ms"/><break strength="strong"/>
              <prosody rate="slow" pitch="+10%">Tom &amp; Jerry &lt;3 &#233;t&#xE9; café ☕ 日本語</prosody>
              <mark name="été.2-b"/><![CDATA[ a < b & c ]]>
            </speak>
            """)
        XCTAssertEqual(document.marks, ["chapter_1", "été.2-b"])
    }

    func testMarkNamesThatWouldWedgeOrConfuseSpeechDispatcher() {
        assertRefused("<speak><mark name=\"a\n.\nb\"/>x</speak>", "mark name contains a line break")
        assertRefused("<speak><mark name=\"a\nb\"/>x</speak>", "mark name contains a line break")
        assertRefused("<speak><mark name=\"a\r.\rb\"/>x</speak>", "mark name contains a line break")
        assertRefused("<speak><mark name=\"a&#10;.&#10;b\"/>x</speak>", "mark name contains a line break")
        assertRefused("<speak><mark name=\"a&#x2028;b\"/>x</speak>", "mark name contains a line break")
        assertRefused("<speak><mark name=\"a\u{85}b\"/>x</speak>", "mark name contains a line break")
        assertRefused("<speak><mark name=\"a\tb\"/>x</speak>", "mark name contains a control character")
        assertRefused("<speak><mark name=\"" + String(repeating: "m", count: 65) + "\"/>x</speak>", "longer than 64 bytes")
        assertRefused("<speak><mark name=\"" + String(repeating: "m", count: 5000) + "\"/>x</speak>", "longer than 64 bytes")
        assertRefused("<speak><mark name=\"a b\"/>x</speak>", "is not an XML name")
        assertRefused("<speak><mark name=\"1a\"/>x</speak>", "is not an XML name")
        assertRefused("<speak><mark name=\"a:b\"/>x</speak>", "is not an XML name")
        assertRefused("<speak><mark name=\"\"/>x</speak>", "empty name")
        assertRefused("<speak><mark/>x</speak>", "without a name")
        assertRefused("<speak><mark name=\"__spd_1\"/>x</speak>", "speech-dispatcher keeps")
        XCTAssertNil(refusal("<speak><mark name=\"" + String(repeating: "m", count: 64) + "\"/>x</speak>"))
    }

    /// espeak-ng reads tags without regard to case and finds an attribute by searching the tag's text
    /// (red team: `<MARK name="a\n.\nb"/>` froze speech-dispatcher for everyone).
    func testWhatEspeakReadsAsAMarkOrABreakIsCheckedInAnyCase() {
        assertRefused("<speak><MARK name=\"a\n.\nb\"/>x</speak>", "mark name contains a line break")
        assertRefused("<speak><Mark name=\"a\n.\nb\"/>x</speak>", "mark name contains a line break")
        assertRefused("<speak><MARK NAME=\"a\n.\nb\"/>x</speak>", "mark name contains a line break")
        assertRefused("<speak><ssml:mark name=\"a\n.\nb\"/>x</speak>", "mark name contains a line break")
        assertRefused("<speak><mark name=\"a\" NAME=\"a\n.\nb\"/>x</speak>", "repeats the attribute 'NAME'")
        assertRefused("<speak><MARK/>x</speak>", "without a name")
        assertRefused("<speak><mark title=\" name='a&#10;.&#10;b'\" name=\"ok\"/>x</speak>", "reads as another attribute")
        assertRefused("<speak><mark id=\"x\" name=\"ok\"/>x</speak>", "a mark takes only a name")
        assertRefused("<speak><mark name=\"__SPD_1\"/>x</speak>", "speech-dispatcher keeps")
        assertRefused("<speak>a<BREAK TIME=\"100s\"/></speak>", "longer than 10 s")
        assertRefused("<speak>a<break x=\" time='100s'\" time=\"1s\"/></speak>", "reads as another attribute")
        assertRefused("<speak>a<break x=\"&#32;time='100s'\"/></speak>", "reads as another attribute")
        assertRefused("<speak>" + String(repeating: "<BREAK/>", count: 61) + "end</speak>", "adding up to more than 60 s")
        assertRefused("<speak><" + String(repeating: "a", count: 65) + ">x</" + String(repeating: "a", count: 65) + "></speak>",
                      "element name longer than 64 bytes")
        assertRefused("<speak><prosody " + String(repeating: "a", count: 20_000) + "=\"1\">x</prosody></speak>",
                      "attribute name longer than 64 bytes")
        assertRefused("<speak><prosody " + (0..<17).map { "a\($0)=\"1\"" }.joined(separator: " ") + ">x</prosody></speak>",
                      "more than 16 attributes")
        // espeak-ng reads a value up to the next double quote: a single-quoted mark name runs on into
        // the white space before "/>" (red team: "cd'" plus line breaks froze speech-dispatcher).
        assertRefused("<speak>one <mark name='cd'\n\n/> three</speak>", "mark name in single quotes")
        assertRefused("<speak>one <mark name='ab'/> two</speak>", "mark name in single quotes")
        // speech-dispatcher opens <audio src> itself: a pipe blocks it for good, any file is played.
        assertRefused("<speak><audio src=\"/proc/self/fd/4\"/>x</speak>", "may not hold <audio>")
        assertRefused("<speak><AUDIO SRC=\"/home/u/ten-minutes.wav\">x</AUDIO></speak>", "may not hold <AUDIO>")
        assertRefused("<speak><lexicon uri=\"/tmp/l.pls\" xml:id=\"l\"/>x</speak>", "may not hold <lexicon>")
        // What real documents hold still passes.
        XCTAssertNil(refusal("<speak><prosody " + (0..<16).map { "a\($0)=\"1\"" }.joined(separator: " ") + ">x</prosody></speak>"))
        XCTAssertNil(refusal("<speak><sub alias=\"it's 2+2=4\">x</sub><emphasis level='strong'>y</emphasis></speak>"))
        XCTAssertEqual(try? SSMLDocument("<speak><MARK NAME=\"Chapter_1\"/>x</speak>").marks, ["Chapter_1"])
    }

    func testBounds() {
        func nested(_ depth: Int) -> String { "<speak>" + String(repeating: "<s>", count: depth - 1) + "x" + String(repeating: "</s>", count: depth - 1) + "</speak>" }
        XCTAssertNil(refusal(nested(32)))
        assertRefused(nested(33), "nests deeper than 32")
        assertRefused("<speak>" + String(repeating: "<s>", count: 9000) + "x" + String(repeating: "</s>", count: 9000) + "</speak>",
                      "nests deeper than 32")
        XCTAssertNil(refusal("<speak>" + String(repeating: "<s>x</s>", count: 4095) + "</speak>"))
        assertRefused("<speak>" + String(repeating: "<s>x</s>", count: 4096) + "</speak>", "more than 4096 elements")
        XCTAssertNil(refusal("<speak>a<break time=\"10s\"/>b<break time=\"9999ms\"/></speak>"))
        assertRefused("<speak>a<break time=\"10.5s\"/></speak>", "longer than 10 s")
        assertRefused("<speak>a<break time=\"100000ms\"/></speak>", "longer than 10 s")
        assertRefused("<speak>" + String(repeating: "a<break time=\"9s\"/>", count: 7) + "</speak>", "adding up to more than 60 s")
        assertRefused("<speak>a<break time=\"forever\"/></speak>", "500ms or 2s")
        assertRefused("<speak>a<break time=\"-1s\"/></speak>", "500ms or 2s")
        XCTAssertNil(refusal("<speak>" + String(repeating: "a<break/>", count: 60) + "</speak>"))
        assertRefused("<speak>" + String(repeating: "<break/>", count: 4000) + "end</speak>", "adding up to more than 60 s")
        XCTAssertNil(refusal("<speak><prosody rate=\"" + String(repeating: "x", count: 256) + "\">hi</prosody></speak>"))
        assertRefused("<speak><prosody rate=\"" + String(repeating: "x", count: 257) + "\">hi</prosody></speak>",
                      "attribute 'rate' of <prosody> is longer than 256 bytes")
        assertRefused("<speak><prosody rate=\"" + String(repeating: "x", count: 65_000) + "\">hi</prosody></speak>", "longer than 256 bytes")
    }

    func testWellFormedness() {
        assertRefused("<speak>x", "ends before </speak>")
        assertRefused("<speak><s>x</p></speak>", "closes <s> with </p>")
        assertRefused("<speak>a < b</speak>", "'<' that starts no tag")
        assertRefused("<speak>Tom & Jerry</speak>", "'&' that starts no reference")
        assertRefused("<speak>&nbsp;</speak>", "only XML's five")
        assertRefused("<!DOCTYPE speak [<!ENTITY x \"y\">]><speak>&x;</speak>", "DOCTYPE")
        assertRefused("<?xml version=\"1.0\"?><!DOCTYPE speak [<!ENTITY x \"y\">]><speak>&x;</speak>", "DOCTYPE")
        assertRefused("<speak><?php echo 1 ?></speak>", "processing instruction")
        assertRefused("<speak>a</speak><speak>b</speak>", "more than one root element")
        assertRefused("<speak>a</speak>tail", "text after its root element")
        assertRefused("<speaker>a</speaker>", "not <speak>")
        assertRefused("<speak><s a=1>x</s></speak>", "without quotes")
        assertRefused("<speak><s a=\"1\" a=\"2\">x</s></speak>", "repeats the attribute")
        assertRefused("<speak>bell \u{07}</speak>", "control character U+0007")
        assertRefused("<speak>a &#0; b</speak>", "no XML character")
        assertRefused("<speak>a &#x1F; b</speak>", "no XML character")
        assertRefused("<speak><!-- a -- b --></speak>", "'--' inside a comment")
        assertRefused("<speak>a ]]> b</speak>", "']]>'")
        // Where: a syntax error says its line and column.
        XCTAssertEqual(refusal("<speak>\n  <s>x</p>\n</speak>"), "SSML closes <s> with </p> (line 2, column 11)")
    }
}
