@testable import TestSupport
import XCTest
@testable import VoiceboxPocketsphinx
import VoiceboxCore
import VoiceboxModels
import VoiceboxSndfile

/// Grammars, keyphrases, the confirmation hint and languages, on the real model.
final class SearchTests: XCTestCase {
    override func setUp() async throws {
        try TestData.requireModel()
    }

    func testASyntaxErrorGivesTheParsersReason() async throws {
        let broken = "#JSGF V1.0;\ngrammar broken;\npublic <a> = ( go | stop ;\n"
        do {
            _ = try await TestData.engine.makeDecoder(.init(grammar: broken))
            XCTFail("a broken grammar was accepted")
        } catch RecognitionError.invalidGrammar(let reason) {
            XCTAssertTrue(reason.hasPrefix("syntax error current token ';'"), reason)
        }
    }

    func testAWordMissingFromTheDictionaryIsNamed() async throws {
        let defective = try String(contentsOfFile: Recordings.path("defective.gram"), encoding: .utf8)
        do {
            _ = try await TestData.engine.makeDecoder(.init(grammar: defective))
            XCTFail("a grammar with an unknown word was accepted")
        } catch RecognitionError.invalidGrammar(let reason) {
            XCTAssertTrue(reason.contains("really_bad_word"), reason)
        }
    }

    func testOtherGrammarFaults() async throws {
        let cases = [
            "#JSGF V1.0; grammar g; <a> = go;": "public rule",
            "#JSGF V1.0; grammar g; public <a> = go <b>;": "Undefined rule",
            "   ": "empty",
            "#JSGF V1.0; grammar g;\nimport <other.rule>;\npublic <a> = go;": "import",
        ]
        for (grammar, expected) in cases {
            do {
                _ = try await TestData.engine.makeDecoder(.init(grammar: grammar))
                XCTFail("accepted: \(grammar)")
            } catch RecognitionError.invalidGrammar(let reason) {
                XCTAssertTrue(reason.contains(expected), "\(grammar): \(reason)")
            }
        }
    }

    /// A refused grammar leaves the loaded model clean: a worker's next recognition on it works.
    func testADecoderRecoversFromARefusedGrammar() async throws {
        let cards = RecognitionConfiguration(grammar: try Recordings.cardsGrammar())
        let model = try TestData.engine.loadModel(for: cards)
        XCTAssertThrowsError(try model.decoder(for: .init(grammar: "#JSGF V1.0; grammar g; public <a> = (;")))
        let file = try await FileReading.read(try AudioFileReader(path: Recordings.path("cards/004.wav")),
                                        through: try model.decoder(for: cards))
        XCTAssertEqual(file.result.text, "five five")
    }

    func testKeyphraseSpotting() async throws {
        let file = try await TestData.engine.transcribeFile(
            path: Recordings.path("goforward.raw"), configuration: .init(keyphrases: ["forward"]))
        XCTAssertEqual(file.result.text, "forward")
        XCTAssertEqual(file.result.confidence, 1)
        let word = try XCTUnwrap(file.result.words.first)
        XCTAssertEqual(word.word, "forward")
        // "go" is spoken from about 0.5 s; "forward" follows it and ends before "ten".
        XCTAssertGreaterThan(word.start, 0.5)
        XCTAssertLessThan(word.end, 2.0)
        XCTAssertLessThan(word.start, word.end)
    }

    func testSeveralKeyphrasesAndCase() async throws {
        let file = try await TestData.engine.transcribeFile(
            path: Recordings.path("goforward.raw"),
            configuration: .init(keyphrases: ["Forward", "  ten   meters "], keyphraseThreshold: 1e-10))
        XCTAssertEqual(file.result.words.map(\.word), ["forward", "ten meters"])
    }

    func testKeyphrasesNotSpokenAreNotFound() async throws {
        let file = try await TestData.engine.transcribeFile(
            path: Recordings.path("something.raw"), configuration: .init(keyphrases: ["forward"]))
        XCTAssertEqual(file.result, .empty)
    }

    func testAKeyphraseOutsideTheDictionary() async throws {
        await assertThrows({ if case .invalidArgument(let reason) = $0 { reason.contains("qwzxv") } else { false } }) {
            try await TestData.engine.makeDecoder(.init(keyphrases: ["go qwzxv"]))
        }
    }

    func testConfirmationHearsYesAndNo() async throws {
        let espeak = "/usr/bin/espeak-ng"
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: espeak), "espeak-ng is not installed")
        let directory = try makeTemporaryDirectory(self)
        // espeak-ng's voice is synthetic: the meaning must come through; the exact word for most.
        for (said, meaning) in [("yes", true), ("no", false), ("correct", true), ("cancel", false),
                                ("okay", true), ("wrong", false), ("nope", false), ("sure", true)] {
            let path = directory.appendingPathComponent("\(said).wav").path
            XCTAssertNotNil(programOutput(espeak, ["-w", path, said]))
            let file = try await TestData.engine.transcribeFile(path: path, configuration: .init(hint: .confirmation))
            print("confirmation: espeak-ng said \"\(said)\", heard \"\(file.result.text)\" confidence \(file.result.confidence)")
            XCTAssertEqual(Confirmation.interpret(file.result.text), meaning, said)
            if ["yes", "no", "correct", "cancel"].contains(said) { XCTAssertEqual(file.result.text, said) }
        }
    }

    func testUnknownLanguage() async throws {
        await assertThrows({ $0 == .unsupportedLanguage("xx-YY") }) {
            try await TestData.engine.makeDecoder(.init(language: "xx-YY"))
        }
        XCTAssertFalse(TestData.engine.languages.contains("xx-YY"))
        XCTAssertTrue(TestData.engine.languages.contains("en-US"))
    }

    /// A second model in the models directory: pocketsphinx-testdata's digits model, linked in
    /// as a made-up language. Its words are pocketsphinx_continuous's with the same model.
    func testAModelFromTheModelsDirectory() async throws {
        let digits = Recordings.path("tidigits")
        let root = try makeTemporaryDirectory(self)
        let directory = root.appendingPathComponent("en-x-digits")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (link, target) in [("hmm", "hmm"), ("digits.lm.bin", "lm/tidigits.lm.bin"), ("digits.dic", "lm/tidigits.dic")] {
            try FileManager.default.createSymbolicLink(atPath: directory.appendingPathComponent(link).path,
                                                       withDestinationPath: digits + "/" + target)
        }
        let engine = InProcessEngine(catalog: ModelCatalog(roots: [root.path]))
        XCTAssertEqual(engine.languages, ["en-US", "en-x-digits"])
        let file = try await engine.transcribeFile(path: digits + "/dhd.2934z.raw",
                                                   configuration: .init(language: "en-x-digits"))
        XCTAssertEqual(file.result.text, "eight nine three four zero")
    }

    /// The same digits model declared for 8 kHz audio: refused, since everything here is 16 kHz.
    func testAModelForAnotherSampleRateIsRefused() async throws {
        let digits = Recordings.path("tidigits")
        let root = try makeTemporaryDirectory(self)
        let acoustic = root.appendingPathComponent("en-x-phone/hmm")
        try FileManager.default.createDirectory(at: acoustic, withIntermediateDirectories: true)
        for name in ["mdef", "means", "variances", "transition_matrices", "sendump"] {
            try FileManager.default.createSymbolicLink(atPath: acoustic.appendingPathComponent(name).path,
                                                       withDestinationPath: digits + "/hmm/" + name)
        }
        let parameters = try String(contentsOfFile: digits + "/hmm/feat.params", encoding: .utf8) + "-samprate 8000\n"
        try parameters.write(to: acoustic.appendingPathComponent("feat.params"), atomically: true, encoding: .utf8)
        for (link, target) in [("en-x-phone/digits.lm.bin", "lm/tidigits.lm.bin"), ("en-x-phone/digits.dic", "lm/tidigits.dic")] {
            try FileManager.default.createSymbolicLink(atPath: root.appendingPathComponent(link).path,
                                                       withDestinationPath: digits + "/" + target)
        }
        let engine = InProcessEngine(catalog: ModelCatalog(roots: [root.path], builtIn: nil))
        await assertThrows({ if case .engineFailure(let reason) = $0 { reason.contains("8000 Hz") } else { false } }) {
            try await engine.makeDecoder(.init(language: "en-x-phone"))
        }
    }

    func testAnotherRegionFallsBackToTheLanguage() async throws {
        let decoder = try await TestData.engine.makeDecoder(.init(language: "en-gb", hint: .search))
        let partial = await decoder.partial()
        XCTAssertNil(partial)
    }
}
