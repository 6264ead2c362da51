@testable import TestSupport
import Foundation
import Glibc
import XCTest
@testable import VoiceboxPocketsphinx
import VoiceboxCore
import VoiceboxModels
import VoiceboxWorkers

/// The parts that need no model.
final class WordFilterTests: XCTestCase {
    func testNonWordsAreDropped() {
        for segment in ["<s>", "</s>", "<sil>", "[NOISE]", "[BREATH]", "++UM++"] {
            XCTAssertNil(WordFilter.spoken(segment), segment)
        }
    }

    func testVariantsLoseTheirSuffix() {
        XCTAssertEqual(WordFilter.spoken("read(2)"), "read")
        XCTAssertEqual(WordFilter.spoken("the(10)"), "the")
        XCTAssertEqual(WordFilter.spoken("forward"), "forward")
        XCTAssertEqual(WordFilter.spoken("ten meters"), "ten meters", "a spotted keyphrase")
        XCTAssertEqual(WordFilter.spoken("(2)"), "(2)", "nothing before the suffix")
        XCTAssertEqual(WordFilter.spoken("a(b)"), "a(b)")
    }
}

final class SearchPlanTests: XCTestCase {
    func testHintsAndSearches() throws {
        XCTAssertEqual(try SearchPlan(.init()), .languageModel)
        XCTAssertEqual(try SearchPlan(.init(hint: .search)), .languageModel)
        XCTAssertEqual(try SearchPlan(.init(hint: .confirmation)), .grammar(SearchPlan.confirmationGrammar))
        XCTAssertEqual(try SearchPlan(.init(grammar: "#JSGF V1.0; grammar g; public <a> = go;")),
                       .grammar("#JSGF V1.0; grammar g; public <a> = go;"))
        XCTAssertEqual(try SearchPlan(.init(keyphrases: [" Go  Forward ", "TEN"], keyphraseThreshold: 1e-20)),
                       .keyphrases(["go forward", "ten"], threshold: 1e-20))
    }

    func testTheConfirmationGrammarListsEveryAnswer() {
        for word in Confirmation.affirmative + Confirmation.negative {
            XCTAssertTrue(SearchPlan.confirmationGrammar.contains(" \(word) ") || SearchPlan.confirmationGrammar.contains(" \(word);"), word)
        }
    }

    func testConflictsAndBadValues() {
        let bad: [RecognitionConfiguration] = [
            .init(grammar: "g", keyphrases: ["a"]),
            .init(grammar: "#JSGF V1.0; grammar g; public <a> = go;", hint: .confirmation),
            .init(keyphrases: ["a"], hint: .confirmation),
            .init(keyphrases: []),
            .init(keyphrases: ["   "]),
            .init(keyphrases: ["a/1e-5/"]),
            .init(keyphrases: ["a\nb"]),
            .init(keyphrases: ["a"], keyphraseThreshold: 0),
            .init(keyphrases: ["a"], keyphraseThreshold: .nan),
        ]
        for configuration in bad {
            XCTAssertThrowsError(try SearchPlan(configuration), "\(configuration)") { error in
                guard case RecognitionError.invalidArgument = error else { return XCTFail("\(configuration): \(error)") }
            }
        }
        XCTAssertThrowsError(try SearchPlan(.init(grammar: "\n \t"))) {
            XCTAssertEqual($0 as? RecognitionError, .invalidGrammar("the grammar is empty"))
        }
        XCTAssertThrowsError(try SearchPlan(.init(grammar: "#JSGF V1.0;\n  import <a.*>;\npublic <x> = y;"))) {
            XCTAssertEqual($0 as? RecognitionError, .invalidGrammar("import statements are not supported"))
        }
    }

    func testConfirmationMeaning() {
        XCTAssertEqual(Confirmation.interpret("yes"), true)
        XCTAssertEqual(Confirmation.interpret("Correct"), true)
        XCTAssertEqual(Confirmation.interpret("no"), false)
        XCTAssertEqual(Confirmation.interpret("cancel"), false)
        XCTAssertNil(Confirmation.interpret("maybe"))
        XCTAssertNil(Confirmation.interpret("yes no"))
        XCTAssertNil(Confirmation.interpret(""))
    }
}

final class SphinxMessageTests: XCTestCase {
    func testTheSourceLocationIsDropped() {
        XCTAssertEqual(SphinxLog.reason(#"ERROR: "fsg_search.c", line 141: The word 'x' is missing in the dictionary"#),
                       "The word 'x' is missing in the dictionary")
        XCTAssertEqual(SphinxLog.reason("plain text"), "plain text")
    }

    func testPiecesAreJoinedIntoLines() {
        let (info, cont, error) = (Int32(1), Int32(2), Int32(4))
        var lines = LogLines()
        XCTAssertEqual(lines.add("INFO: a.c(1): whole\n", continuing: false, level: info), [.init(level: info, text: "INFO: a.c(1): whole")])
        // CMN's values: a head without a newline, continuations, the newline last.
        XCTAssertEqual(lines.add("INFO: cmn_live.c(120): Update from < ", continuing: false, level: info), [])
        XCTAssertEqual(lines.add("41.00 ", continuing: true, level: cont), [])
        XCTAssertEqual(lines.add("-5.29 ", continuing: true, level: cont), [])
        XCTAssertEqual(lines.add(">\n", continuing: true, level: cont),
                       [.init(level: info, text: "INFO: cmn_live.c(120): Update from < 41.00 -5.29 >")])
        // An error without a newline ends where the next message begins, keeping its own level.
        XCTAssertEqual(lines.add("ERROR: b.c(2): No entries", continuing: false, level: error), [])
        XCTAssertEqual(lines.add("INFO: c.c(3): next\n", continuing: false, level: info),
                       [.init(level: error, text: "ERROR: b.c(2): No entries"), .init(level: info, text: "INFO: c.c(3): next")])
        // Blank messages make no lines; a line without its end comes out on flush.
        XCTAssertEqual(lines.add("\n", continuing: false, level: info), [])
        XCTAssertEqual(lines.add("WARN: tail", continuing: false, level: 3), [])
        XCTAssertEqual(lines.flush(), .init(level: 3, text: "WARN: tail"))
        XCTAssertNil(lines.flush())
        // Nothing grows a line for ever.
        XCTAssertEqual(lines.add(String(repeating: "x", count: LogLines.limit + 1), continuing: false, level: info).count, 1)
    }

    /// The parser's line number is heap garbage for a string, in range or not (CI's ThreadSanitizer
    /// run saw "at line 2" for an error on line 3).
    func testTheParsersLineNumberIsAlwaysDropped() {
        XCTAssertEqual(SphinxDecoder.withoutParserLine("syntax error at line -385875966 current token ';'"),
                       "syntax error current token ';'")
        XCTAssertEqual(SphinxDecoder.withoutParserLine("syntax error at line 2 current token ';'"),
                       "syntax error current token ';'")
        XCTAssertEqual(SphinxDecoder.withoutParserLine("Undefined rule in RHS: <b>"), "Undefined rule in RHS: <b>")
    }
}

final class FrameClockTests: XCTestCase {
    func testOneRegionKeepsPocketsphinxsFrames() {
        var clock = FrameClock()
        clock.startUtterance()
        clock.record(inSpeech: false, decodedFrames: 0, streamFrames: 12)
        clock.record(inSpeech: true, decodedFrames: 30, streamFrames: 25)
        clock.record(inSpeech: true, decodedFrames: 42, streamFrames: 38)
        XCTAssertEqual(clock.regions.count, 1)
        XCTAssertEqual(clock.streamFrame(reported: 57, offset: 5), 57)
        XCTAssertEqual(clock.streamFrame(reported: 57, offset: nil), 57)
    }

    /// Speech at 100-199 (decoded 0-99), silence dropped, speech again from stream frame 400
    /// (decoded 100-): pocketsphinx reports every frame + 400.
    func testLaterRegionsAreTranslated() {
        var clock = FrameClock()
        clock.startUtterance()
        clock.record(inSpeech: true, decodedFrames: 10, streamFrames: 110)
        clock.record(inSpeech: true, decodedFrames: 100, streamFrames: 200)
        clock.record(inSpeech: false, decodedFrames: 100, streamFrames: 300)
        clock.record(inSpeech: false, decodedFrames: 100, streamFrames: 390)
        clock.record(inSpeech: true, decodedFrames: 110, streamFrames: 410)
        XCTAssertEqual(clock.regions, [.init(decoded: 0, stream: 100), .init(decoded: 100, stream: 400)])
        // A word at decoded 20-40 is reported at 420-440; it was said at 120-140.
        XCTAssertEqual(clock.streamFrame(reported: 420, offset: 400), 120)
        XCTAssertEqual(clock.streamFrame(reported: 440, offset: nil), 140)
        // A word at decoded 105 is reported at 505; it was said at 405.
        XCTAssertEqual(clock.streamFrame(reported: 505, offset: 400), 405)
    }

    /// With a 3-frame feature window the decoder holds back 3 frames: the first region starts 3
    /// frames earlier than the decoded count suggests, and a later region's first chunk begins
    /// with the 3 frames held back from the one before.
    func testTheFeatureWindowLag() {
        var clock = FrameClock()
        clock.lag = 3
        clock.startUtterance()
        clock.record(inSpeech: true, decodedFrames: 7, streamFrames: 110)     // stream 100-109 emitted, 100-106 decoded
        clock.record(inSpeech: true, decodedFrames: 97, streamFrames: 200)
        clock.record(inSpeech: false, decodedFrames: 97, streamFrames: 300)   // 3 frames still held
        clock.record(inSpeech: true, decodedFrames: 110, streamFrames: 410)   // 97-99 old, 100-109 ↔ 397-406
        XCTAssertEqual(clock.lag, 3, "kept across utterances")
        XCTAssertEqual(clock.regions, [.init(decoded: 0, stream: 100), .init(decoded: 100, stream: 397)])
        XCTAssertEqual(clock.streamFrame(reported: 397 + 50, offset: 397), 150)
        XCTAssertEqual(clock.streamFrame(reported: 397 + 105, offset: 397), 402)
    }

    func testANewUtteranceForgetsRegions() {
        var clock = FrameClock()
        clock.record(inSpeech: true, decodedFrames: 10, streamFrames: 110)
        clock.record(inSpeech: false, decodedFrames: 20, streamFrames: 300)
        clock.record(inSpeech: true, decodedFrames: 30, streamFrames: 400)
        XCTAssertEqual(clock.regions.count, 2)
        clock.startUtterance()
        XCTAssertEqual(clock.regions, [])
        XCTAssertEqual(clock.streamFrame(reported: 700, offset: 650), 700)
    }
}

final class ModelCatalogTests: XCTestCase {
    /// Makes <root>/<language>/ with an acoustic model directory, a language model and a dictionary.
    private func makeModel(_ root: URL, _ language: String, lm: String = "model.lm.bin") throws {
        let directory = root.appendingPathComponent(language)
        let acoustic = directory.appendingPathComponent("acoustic")
        try FileManager.default.createDirectory(at: acoustic, withIntermediateDirectories: true)
        XCTAssertTrue(FileManager.default.createFile(atPath: acoustic.appendingPathComponent("mdef").path,
                                                     contents: Data("# a text model definition\n0.3\n".utf8)))
        for file in [acoustic.appendingPathComponent("means"), acoustic.appendingPathComponent("variances"),
                     acoustic.appendingPathComponent("transition_matrices"), directory.appendingPathComponent(lm),
                     directory.appendingPathComponent("words.dict")] {
            XCTAssertTrue(FileManager.default.createFile(atPath: file.path, contents: Data("x".utf8)))
        }
    }

    /// pocketsphinx calls exit() on an mdef it cannot parse: such models are not offered.
    func testMalformedAcousticModelsAreSkipped() throws {
        let root = try makeTemporaryDirectory(self)
        try makeModel(root, "de-DE")
        let mdef = root.appendingPathComponent("de-DE/acoustic/mdef").path
        XCTAssertTrue(ModelCatalog.isAcousticModel(root.appendingPathComponent("de-DE/acoustic").path))
        try "x\n".write(toFile: mdef, atomically: true, encoding: .utf8)
        XCTAssertEqual(ModelCatalog(roots: [root.path], builtIn: nil).models(), [])
        try FileManager.default.removeItem(atPath: mdef)
        try FileManager.default.copyItem(atPath: "/usr/share/pocketsphinx/test/data/tidigits/hmm/mdef", toPath: mdef)
        XCTAssertEqual(ModelCatalog(roots: [root.path], builtIn: nil).models().map(\.language), ["de-DE"], "binary mdef")
    }

    func testModelsUnderTheRoots() throws {
        let first = try makeTemporaryDirectory(self), second = try makeTemporaryDirectory(self)
        try makeModel(first, "de-DE")
        try makeModel(second, "de-DE", lm: "other.lm")
        try makeModel(second, "fr-FR", lm: "fr.lm")
        // Incomplete: no dictionary.
        try FileManager.default.createDirectory(at: second.appendingPathComponent("it-IT/acoustic"), withIntermediateDirectories: true)
        let catalog = ModelCatalog(roots: [first.path, second.path, "/nonexistent"], builtIn: nil)
        XCTAssertEqual(catalog.models().map(\.language), ["de-DE", "fr-FR"])
        let german = try XCTUnwrap(catalog.model(for: "de-de"))
        XCTAssertEqual(german.languageModel, first.path + "/de-DE/model.lm.bin", "the first root wins")
        XCTAssertEqual(german.acousticModel, first.path + "/de-DE/acoustic")
        XCTAssertEqual(german.dictionary, first.path + "/de-DE/words.dict")
        XCTAssertEqual(catalog.model(for: "de-AT")?.language, "de-DE", "same language, other region")
        XCTAssertEqual(catalog.model(for: "fr")?.language, "fr-FR")
        XCTAssertNil(catalog.model(for: "it-IT"))
        XCTAssertNil(catalog.model(for: "xx-YY"))
        XCTAssertNil(catalog.model(for: ""))
    }

    /// The catalog picks its model with the service's own function, so the language the service
    /// names in its answer is the model's.
    func testTheCatalogChoosesAsTheServiceDoes() throws {
        let root = try makeTemporaryDirectory(self)
        for language in ["de-DE", "de-AT", "en-US", "pt-BR"] { try makeModel(root, language) }
        let catalog = ModelCatalog(roots: [root.path], builtIn: nil)
        let languages = catalog.models().map(\.language)
        for requested in ["de-at", "DE", "de-CH", "en_GB", "en", "PT", "fr", "", "x"] {
            XCTAssertEqual(catalog.model(for: requested)?.language,
                           RecognitionLanguageMatching.best(for: requested, among: languages), requested)
        }
        XCTAssertEqual(catalog.model(for: "de-CH")?.language, "de-AT", "the first of the language, by tag")
        XCTAssertEqual(catalog.model(for: "en_GB")?.language, "en-US")
    }

    func testAUserModelBeatsTheBuiltInOne() throws {
        let root = try makeTemporaryDirectory(self)
        try makeModel(root, "en-US")
        let builtIn = SpeechModel(language: "en-US", acousticModel: "/a", languageModel: "/b", dictionary: "/c")
        let catalog = ModelCatalog(roots: [root.path], builtIn: builtIn)
        XCTAssertEqual(catalog.model(for: "en-US")?.acousticModel, root.path + "/en-US/acoustic")
        XCTAssertEqual(ModelCatalog(roots: [], builtIn: builtIn).model(for: "en-us"), builtIn)
    }

    func testStandardRootsFollowXDG() {
        let catalog = ModelCatalog.standard(environment: ["HOME": "/home/u", "XDG_DATA_DIRS": "/opt/share:/usr/share"])
        XCTAssertEqual(catalog.roots, ["/home/u/.local/share/voicebox/models", "/opt/share/voicebox/models",
                                       "/usr/share/voicebox/models"])
        let custom = ModelCatalog.standard(environment: ["HOME": "/home/u", "XDG_DATA_HOME": "/data"])
        XCTAssertEqual(custom.roots, ["/data/voicebox/models", "/usr/local/share/voicebox/models",
                                      "/usr/share/voicebox/models"])
    }

    /// The service's engine; its worker is not there, since a language without a model starts none.
    func testAnEngineWithoutModelsSupportsNothing() async throws {
        let engine = WorkerRecognitionEngine(workerPath: "/nonexistent/voicebox-worker", catalog: ModelCatalog(roots: [], builtIn: nil))
        XCTAssertEqual(engine.languages, [])
        await assertThrows({ $0 == .unsupportedLanguage("en-US") }) { try await engine.makeDecoder(.init()) }
    }

    /// A FIFO where a model file should be is no model, and looking does not block (the catalog is
    /// read on every Recognize; a red-team pass hung voiceboxd with a FIFO named mdef).
    func testAFifoInAModelDirectoryIsNoModelAndDoesNotBlock() throws {
        let root = try makeTemporaryDirectory(self)
        let acoustic = root.appendingPathComponent("ja-JP/acoustic")
        try FileManager.default.createDirectory(at: acoustic, withIntermediateDirectories: true)
        for name in ["means", "variances", "transition_matrices"] {
            try Data("x".utf8).write(to: acoustic.appendingPathComponent(name))
        }
        XCTAssertEqual(mkfifo(acoustic.appendingPathComponent("mdef").path, 0o600), 0)
        for name in ["x.lm.bin", "x.dict"] { try Data("x".utf8).write(to: root.appendingPathComponent("ja-JP/" + name)) }
        // On a thread of its own: should it block on the FIFO, the test fails after 30 s instead
        // of hanging (a give-up bound: a look that never ends, not a slow one).
        let looked = DispatchSemaphore(value: 0)
        let path = root.path, acousticPath = acoustic.path
        Thread.detachNewThread {
            XCTAssertFalse(ModelCatalog.isAcousticModel(acousticPath))
            XCTAssertEqual(ModelCatalog(roots: [path], builtIn: nil).models(), [])
            looked.signal()
        }
        XCTAssertEqual(looked.wait(timeout: .now() + 30), .success, "looking at the FIFO blocked")
    }
}
