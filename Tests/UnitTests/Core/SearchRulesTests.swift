@testable import TestSupport
import VoiceboxContract
import XCTest
@testable import VoiceboxCore

/// The one set of search rules, as the service's options and an engine see them.
final class SearchRulesTests: XCTestCase {
    private let grammar = "#JSGF V1.0; grammar g; public <a> = go;"

    func testEachFaultAndWhatEachSideSays() {
        let cases: [(RecognitionConfiguration, SearchFault, String, RecognitionError)] = [
            (.init(grammar: grammar, keyphrases: ["a"]), .grammarAndKeyphrases,
             "options 'grammar' and 'keyphrases' contradict each other: give one",
             .invalidArgument("a grammar and keyphrases cannot be combined")),
            (.init(grammar: grammar, hint: .confirmation), .confirmationWithGrammar,
             "option 'hint' confirmation brings its own grammar: it takes no 'grammar' or 'keyphrases'",
             .invalidArgument("the confirmation hint brings its own grammar")),
            (.init(keyphrases: ["a"], hint: .confirmation), .confirmationWithKeyphrases,
             "option 'hint' confirmation brings its own grammar: it takes no 'grammar' or 'keyphrases'",
             .invalidArgument("the confirmation hint cannot spot keyphrases")),
            (.init(grammar: "\n \t"), .emptyGrammar, "option 'grammar' is empty", .invalidGrammar("the grammar is empty")),
            (.init(grammar: "#JSGF V1.0;\n  import <a.*>;\npublic <x> = y;"), .grammarImports,
             "option 'grammar' is not a usable JSGF grammar: import statements are not supported",
             .invalidGrammar("import statements are not supported")),
            (.init(keyphrases: []), .noKeyphrases, "option 'keyphrases' is empty", .invalidArgument("no keyphrases given")),
            (.init(keyphrases: ["a", "   "]), .emptyKeyphrase, "option 'keyphrases' holds an empty phrase",
             .invalidArgument("a keyphrase is empty")),
            (.init(keyphrases: ["a/1e-5/"]), .keyphraseCharacters("a/1e-5/"),
             "option 'keyphrases': a phrase cannot contain '/' or control characters: 'a/1e-5/'",
             .invalidArgument("a keyphrase cannot contain '/' or control characters: a/1e-5/")),
            (.init(keyphrases: ["a\tb\u{7}"]), .keyphraseCharacters("a\tb\u{7}"),
             "option 'keyphrases': a phrase cannot contain '/' or control characters: 'a\tb\u{7}'",
             .invalidArgument("a keyphrase cannot contain '/' or control characters: a\tb\u{7}")),
            (.init(keyphrases: ["a"], keyphraseThreshold: 0), .keyphraseThreshold(0),
             "the keyphrase threshold must be positive, not 0.0",
             .invalidArgument("the keyphrase threshold must be positive, not 0.0")),
        ]
        for (configuration, fault, optionMessage, engineError) in cases {
            XCTAssertThrowsError(try configuration.checkSearch()) { XCTAssertEqual($0 as? SearchFault, fault) }
            XCTAssertEqual(fault.optionError, .invalidArgument(optionMessage))
            XCTAssertEqual(fault.recognitionError, engineError)
        }
    }

    /// An import anywhere a statement may start is refused: pocketsphinx would read the named
    /// file from the disk (a red-team pass read /tmp files and hung a worker on a FIFO through
    /// `grammar g; import <tmp.x.s>;` on one line, which the old line-start check let through).
    func testImportsAreFoundWhereverAStatementStarts() {
        for grammar in ["#JSGF V1.0; grammar g; import <tmp.rt6.evil.s>; public <t> = <tmp.rt6.evil.s>;",
                        "#JSGF V1.0;\n  import <a.*>;", "#JSGF V1.0; /* c */ import<a.b>;", "#JSGF V1.0; // c\nimport <a.b>;",
                        "#JSGF V1.0;import\t<a.b>;", "import <a.b>;"] {
            XCTAssert(RecognitionConfiguration.imports(grammar), grammar)
            XCTAssertThrowsError(try RecognitionConfiguration(grammar: grammar).checkSearch(), grammar) { error in
                XCTAssertEqual(error as? SearchFault, .grammarImports, grammar)
            }
        }
        for grammar in ["#JSGF V1.0; grammar g; public <t> = import | export;", "#JSGF V1.0; public <t> = a |\n import;",
                        "#JSGF V1.0; /* import <a.b>; */ public <t> = a;", "#JSGF V1.0; // import <a.b>;\npublic <t> = a;",
                        "#JSGF V1.0; public <importer> = a;", "#JSGF V1.0; <imports> = a;"] {
            XCTAssertFalse(RecognitionConfiguration.imports(grammar), grammar)
        }
        // 64 KiB of blank lines and semicolons (how soon: SpeedTests' GrammarScanSpeedTests).
        XCTAssertFalse(RecognitionConfiguration.imports(String(repeating: " ;\n", count: 21_000)))
    }

    func testGoodSearches() throws {
        for configuration in [RecognitionConfiguration(), .init(hint: .confirmation), .init(hint: .search),
                              .init(grammar: grammar), .init(keyphrases: [" Go  Forward ", "TEN"], keyphraseThreshold: 1e-20),
                              .init(grammar: "#JSGF V1.0; grammar g; public <a> = import;")] {
            XCTAssertNoThrow(try configuration.checkSearch(), "\(configuration)")
        }
    }

    /// The options run the same rules: each option refused as the rule says.
    func testRecognizeOptionsRefuseWhatTheRulesRefuse() {
        let cases: [([String: OptionValue], SearchFault)] = [
            (["grammar": .string(grammar), "keyphrases": .strings(["a"])], .grammarAndKeyphrases),
            (["hint": .string("confirmation"), "grammar": .string(grammar)], .confirmationWithGrammar),
            (["hint": .string("confirmation"), "keyphrases": .strings(["a"])], .confirmationWithKeyphrases),
            (["grammar": .string(" ")], .emptyGrammar),
            (["grammar": .string("#JSGF V1.0;\nimport <x.y>;\n")], .grammarImports),
            (["keyphrases": .strings([])], .noKeyphrases),
            (["keyphrases": .strings([""])], .emptyKeyphrase),
            (["keyphrases": .strings(["a/b"])], .keyphraseCharacters("a/b")),
        ]
        for (options, fault) in cases {
            XCTAssertThrowsError(try RecognizeOptions(options), "\(options)") { XCTAssertEqual($0 as? VoiceboxError, fault.optionError) }
        }
    }

    func testTheServiceLimitsComeBeforeTheContent() {
        let big = String(repeating: "x", count: RecognizeOptions.maximumGrammarBytes + 1)
        XCTAssertThrowsError(try RecognizeOptions(["grammar": .string(big)])) {
            XCTAssertEqual($0 as? VoiceboxError, .init(.tooLarge, "option 'grammar' is 65537 bytes; the limit is 65536"))
        }
        let many = (0...RecognizeOptions.maximumKeyphrases).map { "w\($0)" }
        XCTAssertThrowsError(try RecognizeOptions(["keyphrases": .strings(many + ["a/b"])])) {
            XCTAssertEqual($0 as? VoiceboxError, .init(.tooLarge, "option 'keyphrases' has 258 phrases; the limit is 256"))
        }
        XCTAssertNoThrow(try RecognitionConfiguration(grammar: big).checkSearch(), "an engine has no limit")
    }

    /// Blank lines by the thousand are no import (they once took the scan minutes: how soon now,
    /// SpeedTests' GrammarScanSpeedTests).
    func testBlankLinesAreNoImport() throws {
        try RecognitionConfiguration(grammar: "x" + String(repeating: "\n", count: 65_000)).checkSearch()
    }
}
