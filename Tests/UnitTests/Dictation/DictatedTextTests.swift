@testable import TestSupport
import XCTest
@testable import VoiceboxDictation

final class DictatedTextTests: XCTestCase {
    private func check(_ heard: String, _ written: String, language: String? = nil, replacements: Replacements = Replacements(),
                       _ message: String = "", file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(DictatedText.render(heard, language: language, replacements: replacements), written, message,
                       file: file, line: line)
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

    func testACapitalAtTheStartAndAfterASentenceEndOnly() {
        check("go forward period turn left comma then stop period", "Go forward. Turn left, then stop.")
        check("really question mark yes exclamation mark ok", "Really? Yes! Ok")
        check("one colon two", "One: two")
        check("go forward ten meters", "Go forward ten meters", "capitalized even without spoken marks")
        check("a full house and a new car", "A full house and a new car")
    }

    func testIIsAlwaysACapital() {
        check("yes i think i can", "Yes I think I can")
        check("i'm sure i'll come and i've said i'd", "I'm sure I'll come and I've said I'd")
        check("it is in italy", "It is in italy", "only the word i")
        check("oui i", "Oui i", language: "fr-FR")
    }

    func testEmptyAndWhitespace() {
        check("", "")
        check("  stop  ", "Stop")
        check("hello   comma\tworld", "Hello, world")
    }

    func testAMarkFirstLastOrRepeated() {
        check("period", ".")
        check("comma hello", ", Hello")
        check("period hello", ". Hello")
        check("wait period period period", "Wait...")
        check("what question mark question mark", "What??")
        check("new line new line text", "\n\nText")
        check("a new paragraph", "A\n\n")
    }

    func testWordsMatchWhateverTheirCase() {
        check("Hello COMMA world Full Stop", "Hello, world.")
        check("New Paragraph next", "\n\nNext")
    }

    func testLiteralLeavesTheWordsAsHeard() {
        let replacements = Replacements([("voice box", "Voicebox")])
        XCTAssertEqual(DictatedText.render("hello comma i said voice box period", literal: true, replacements: replacements),
                       "hello comma i said voice box period")
    }

    func testSpokenPunctuationIsEnglishOnly() {
        check("bonjour comma monde", "Bonjour comma monde", language: "fr")
        check("hello comma world", "Hello, world", language: "en-GB")
        check("hello comma world", "Hello, world", language: "en")
    }

    // MARK: Replacements

    func testReplacementsAfterSpokenPunctuation() {
        let replacements = Replacements([("voice box", "Voicebox"), ("um", ""), ("smiley face", ":)"), ("full stop", "FULL STOP")])
        check("i use voice box daily period", "I use Voicebox daily.", replacements: replacements)
        check("voice box is um great", "Voicebox is great", replacements: replacements)
        check("Voice Box", "Voicebox", replacements: replacements)
        check("nice smiley face period", "Nice :).", replacements: replacements)
        check("it ends full stop", "It ends.", replacements: replacements, "spoken punctuation comes first")
        check("the voice boxes", "The voice boxes", replacements: replacements, "whole words only")
        check("voice period box", "Voice. Box", replacements: replacements, "a phrase never spans a mark")
    }

    func testAReplacementIsWrittenAsItStands() {
        let replacements = Replacements([("iphone", "iPhone"), ("mister", "Mr."), ("gonna", "going to")])
        check("iphone period iphone", "iPhone. iPhone", replacements: replacements)
        check("ask mister smith", "Ask Mr. Smith", replacements: replacements, "a replacement ending a sentence capitalizes the next word")
        check("gonna go", "going to go", replacements: replacements)
    }

    func testTheLongestPhraseWins() {
        let replacements = Replacements([("new york", "NY"), ("new york city", "NYC")])
        check("in new york city", "In NYC", replacements: replacements)
        check("in new york", "In NY", replacements: replacements)
    }

    func testParsingTheFile() {
        let (replacements, bad) = Replacements.parse("""
            # my words
            voice box = Voicebox

              e mail   =   email
            um =
            no equals sign here
             = nothing to match
            equals = a = b
            """)
        XCTAssertEqual(replacements.entries, [
            .init(phrase: ["voice", "box"], replacement: "Voicebox"),
            .init(phrase: ["e", "mail"], replacement: "email"),
            .init(phrase: ["um"], replacement: ""),
            .init(phrase: ["equals"], replacement: "a = b"),
        ])
        XCTAssertEqual(bad, [.init(number: 6, text: "no equals sign here"), .init(number: 7, text: " = nothing to match")])
    }

    func testTheFilesPlace() throws {
        XCTAssertEqual(Replacements.path(["XDG_CONFIG_HOME": "/c", "HOME": "/h"]), "/c/voicebox/replacements")
        XCTAssertEqual(Replacements.path(["HOME": "/h"]), "/h/.config/voicebox/replacements")
        XCTAssertEqual(Replacements.path(["XDG_CONFIG_HOME": "relative", "HOME": "/h"]), "/h/.config/voicebox/replacements",
                       "a relative XDG_CONFIG_HOME is ignored, as the spec says")
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-replacements-\(UUID())")
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("voicebox"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try "voice box = Voicebox\nbroken\n".write(to: directory.appendingPathComponent("voicebox/replacements"), atomically: true, encoding: .utf8)
        var warnings: [String] = []
        let loaded = Replacements.load(["XDG_CONFIG_HOME": directory.path], warn: { warnings.append($0) })
        XCTAssertEqual(loaded, Replacements([("voice box", "Voicebox")]))
        XCTAssertEqual(warnings, ["\(directory.path)/voicebox/replacements:2: not 'phrase = replacement', skipped: broken"])
        XCTAssertEqual(Replacements.load(["XDG_CONFIG_HOME": directory.path + "/none"], warn: { warnings.append($0) }), Replacements())
    }
}
