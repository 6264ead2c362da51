@testable import TestSupport
import VoiceboxContract
import XCTest
@testable import VoiceboxCore

final class SpeakOptionsTests: XCTestCase {
    func testDefaults() throws {
        let options = try SpeakOptions([:])
        XCTAssertEqual(options, SpeakOptions())
        XCTAssertEqual(options.priority, .message)
        XCTAssertFalse(options.wait)
    }

    func testEveryOption() throws {
        let options = try SpeakOptions(["voice": .string("espeak-ng/English"), "rate": .double(4), "pitch": .double(0.5),
                                        "volume": .double(0), "ssml": .bool(true), "priority": .string("important"), "wait": .bool(true)])
        XCTAssertEqual(options.voice, "espeak-ng/English")
        XCTAssertEqual(options.rate, 4)
        XCTAssertEqual(options.pitch, 0.5)
        XCTAssertEqual(options.volume, 0)
        XCTAssertTrue(options.ssml)
        XCTAssertEqual(options.priority, .important)
        XCTAssertTrue(options.wait)
    }

    func testErrorsNameTheKeyOrValue() {
        let cases: [([String: OptionValue], String)] = [
            (["colour": .string("red")], "unknown option 'colour'"),
            (["rate": .string("fast")], "option 'rate' must be of type d, not s"),
            (["rate": .double(0.2)], "option 'rate' must be between 0.25 and 4.0, not 0.2"),
            (["pitch": .double(2.5)], "option 'pitch'"),
            (["volume": .double(1.5)], "option 'volume'"),
            (["ssml": .other(signature: "i")], "option 'ssml' must be of type b, not i"),
            (["priority": .string("urgent")], "not 'urgent'"),
            (["language": .string("english please")], "'english please'"),
            (["voice": .string("v"), "language": .string("en")], "'voice' and 'language'"),
        ]
        for (options, expected) in cases {
            XCTAssertThrowsError(try SpeakOptions(options)) { error in
                let error = error as! VoiceboxError
                XCTAssertEqual(error.kind, .invalidArgument)
                XCTAssertTrue(error.message.contains(expected), "\(error.message) should contain \(expected)")
            }
        }
    }
}

final class VoiceMatchingTests: XCTestCase {
    static func voice(_ name: String, _ language: String, _ variant: String = "none") -> Voice {
        Voice(id: "espeak-ng/\(name)" + (variant == "none" ? "" : "+\(variant)"), name: name, language: language, variant: variant, engine: "espeak-ng")
    }

    let all = [voice("English (Great Britain)", "en-GB", "Adam"), voice("German", "de"), voice("English (America)", "en-US"),
               voice("English (Great Britain)", "en-GB"), voice("English", "en"), voice("Scottish", "en-GB-scotland")]

    func testLanguageFilters() {
        XCTAssertEqual(VoiceMatching.voices(all, for: "").count, all.count)
        // The plain language first, then regions; default variants before the others.
        XCTAssertEqual(VoiceMatching.voices(all, for: "en").map(\.language), ["en", "en-US", "en-GB", "en-GB-scotland", "en-GB"])
        XCTAssertEqual(VoiceMatching.voices(all, for: "EN-gb").map(\.id),
                       ["espeak-ng/English (Great Britain)", "espeak-ng/English (Great Britain)+Adam", "espeak-ng/Scottish"])
        XCTAssertEqual(VoiceMatching.voices(all, for: "fr"), [])
    }

    func testBestVoiceFallsBackToThePlainLanguage() {
        XCTAssertEqual(VoiceMatching.best(all, for: "en-GB")?.id, "espeak-ng/English (Great Britain)")
        XCTAssertEqual(VoiceMatching.best(all, for: "en-NZ")?.id, "espeak-ng/English")
        XCTAssertEqual(VoiceMatching.best(all, for: "de-AT")?.id, "espeak-ng/German")
        XCTAssertNil(VoiceMatching.best(all, for: "qq"))
    }

    func testLanguageTags() {
        for good in ["en", "en-GB", "zh-Hans-CN", "gsw", "es-419"] { XCTAssertTrue(LanguageTag.isWellFormed(good), good) }
        for bad in ["", "e", "english", "en-", "en_GB", "en-GB-toolongsubtag", "1en"] { XCTAssertFalse(LanguageTag.isWellFormed(bad), bad) }
    }
}
