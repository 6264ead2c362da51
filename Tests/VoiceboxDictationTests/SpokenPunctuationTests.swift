import XCTest
import VoiceboxDictation

final class SpokenPunctuationTests: XCTestCase {
    private func check(_ heard: String, _ written: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(SpokenPunctuation.apply(heard), written, file: file, line: line)
    }

    func testEachSpokenMark() {
        check("hello comma world", "Hello, world")
        check("it is done period", "It is done.")
        check("it is done full stop", "It is done.")
        check("is it done question mark", "Is it done?")
        check("wow exclamation mark", "Wow!")
        check("wow exclamation point", "Wow!")
        check("dear sir colon thanks", "Dear sir: thanks")
        check("first new line second", "First\nSecond")
        check("first new paragraph second", "First\n\nSecond")
    }

    func testACapitalAfterASentenceEndOnly() {
        check("go forward period turn left comma then stop period",
              "Go forward. Turn left, then stop.")
        check("really question mark yes exclamation mark ok", "Really? Yes! Ok")
        check("one colon two", "One: two")
    }

    func testTextWithNoSpokenMarksIsUnchanged() {
        check("go forward ten meters", "go forward ten meters")
        check("", "")
        check("  stop  ", "  stop  ")
        check("a full house and a new car", "a full house and a new car")
    }

    func testAMarkFirstLastOrRepeated() {
        check("period", ".")
        check("comma hello", ", Hello")
        check("period hello", ". Hello")
        check("the end period", "The end.")
        check("wait period period period", "Wait...")
        check("what question mark question mark", "What??")
        check("new line new line text", "\n\nText")
        check("a new paragraph", "A\n\n")
    }

    func testWordsMatchWhateverTheirCase() {
        check("Hello COMMA world Full Stop", "Hello, world.")
        check("New Paragraph next", "\n\nNext")
    }

    func testLiteralTurnsItOff() {
        XCTAssertEqual(SpokenPunctuation.apply("hello comma world period", literal: true), "hello comma world period")
    }

    func testWhitespaceBetweenWordsIsOneSpace() {
        check("hello   comma\tworld", "Hello, world")
    }
}
