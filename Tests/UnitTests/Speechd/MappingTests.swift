@testable import TestSupport
import VoiceboxCore
import XCTest
@testable import VoiceboxSpeechd

/// Pure conversions: no speech-dispatcher needed.
final class MappingTests: XCTestCase {
    func testRateIsFiftyTimesLog2Clamped() {
        XCTAssertEqual(SpeechdMapping.rate(1), 0)
        XCTAssertEqual(SpeechdMapping.rate(2), 50)
        XCTAssertEqual(SpeechdMapping.rate(4), 100)
        XCTAssertEqual(SpeechdMapping.rate(0.5), -50)
        XCTAssertEqual(SpeechdMapping.rate(0.25), -100)
        XCTAssertEqual(SpeechdMapping.rate(1.5), 29)
        XCTAssertEqual(SpeechdMapping.rate(100), 100)
        XCTAssertEqual(SpeechdMapping.rate(0.01), -100)
        XCTAssertEqual(SpeechdMapping.rate(0), -100)
        XCTAssertEqual(SpeechdMapping.rate(-3), -100)
        XCTAssertEqual(SpeechdMapping.rate(.nan), 0)
        XCTAssertEqual(SpeechdMapping.rate(.infinity), 100)
    }

    func testPitchIsHundredTimesLog2Clamped() {
        XCTAssertEqual(SpeechdMapping.pitch(1), 0)
        XCTAssertEqual(SpeechdMapping.pitch(2), 100)
        XCTAssertEqual(SpeechdMapping.pitch(0.5), -100)
        XCTAssertEqual(SpeechdMapping.pitch(1.25), 32)
        XCTAssertEqual(SpeechdMapping.pitch(3), 100)
        XCTAssertEqual(SpeechdMapping.pitch(0.1), -100)
    }

    func testVolumeIsLinear() {
        XCTAssertEqual(SpeechdMapping.volume(0), -100)
        XCTAssertEqual(SpeechdMapping.volume(0.5), 0)
        XCTAssertEqual(SpeechdMapping.volume(1), 100)
        XCTAssertEqual(SpeechdMapping.volume(0.75), 50)
        XCTAssertEqual(SpeechdMapping.volume(2), 100)
        XCTAssertEqual(SpeechdMapping.volume(-1), -100)
    }

    func testPriorities() {
        XCTAssertEqual(SpeechdMapping.priority(.message), "message")
        XCTAssertEqual(SpeechdMapping.priority(.important), "important")
        XCTAssertEqual(SpeechdMapping.priority(.text), "text")
        XCTAssertEqual(SpeechdMapping.priority(.notification), "notification")
        XCTAssertEqual(SpeechdMapping.priority(.progress), "progress")
    }

    func testInternalMarks() {
        XCTAssertTrue(SpeechdMapping.isInternalMark("__spd_1"))
        XCTAssertFalse(SpeechdMapping.isInternalMark("chapter"))
    }

    func testAddresses() {
        XCTAssertEqual(SpeechdAddress.parse("unix_socket:/tmp/a:b/speechd.sock"), .unixSocket(path: "/tmp/a:b/speechd.sock"))
        XCTAssertEqual(SpeechdAddress.parse("inet_socket:localhost:7000"), .inetSocket(host: "localhost", port: 7000))
        XCTAssertEqual(SpeechdAddress.parse("inet_socket:example.org"), .inetSocket(host: "example.org", port: 6560))
        XCTAssertEqual(SpeechdAddress.parse("inet_socket"), .inetSocket(host: "127.0.0.1", port: 6560))
        XCTAssertEqual(SpeechdAddress.parse("unix_socket"), .unixSocket(path: SpeechdAddress.defaultSocketPath()))
        XCTAssertNil(SpeechdAddress.parse("dbus:whatever"))
        XCTAssertNil(SpeechdAddress.parse("inet_socket:host:notaport"))
    }

    /// Where the service connects with no address configured: libspeechd's default, which it
    /// resolves itself now (the service links neither libspeechd nor glib).
    func testTheDefaultAddressIsLibspeechds() throws {
        XCTAssertEqual(try SpeechdAddress.resolve(nil, environment: ["SPEECHD_ADDRESS": "inet_socket:h:7001"]).get(),
                       .inetSocket(host: "h", port: 7001))
        XCTAssertEqual(try SpeechdAddress.resolve("unix_socket:/a", environment: ["SPEECHD_ADDRESS": "inet_socket"]).get(),
                       .unixSocket(path: "/a"), "the configured address comes first")
        XCTAssertEqual(try SpeechdAddress.resolve(nil, environment: ["SPEECHD_ADDRESS": ""]).get(),
                       .unixSocket(path: SpeechdAddress.defaultSocketPath()))
        XCTAssertEqual(try SpeechdAddress.resolve(nil, environment: [:]).get(), .unixSocket(path: SpeechdAddress.defaultSocketPath()))
        XCTAssertThrowsError(try SpeechdAddress.resolve(nil, environment: ["SPEECHD_ADDRESS": "dbus:x"]).get())
        // libspeechd's rule: the runtime directory's speech-dispatcher/speechd.sock.
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            XCTAssertEqual(SpeechdAddress.defaultSocketPath(), runtime + "/speech-dispatcher/speechd.sock")
        }
    }

    func testVoiceListParsing() {
        let lines = ["English (Great Britain)\ten-GB\tnone", "English (Great Britain)+Annie\ten-GB\tAnnie",
                     "OnlyName", "Two\tfields", "Extra\tx\ty\tz", "", "\tno name"]
        XCTAssertEqual(VoiceLister.parseVoiceLines(lines), [
            .init(name: "English (Great Britain)", language: "en-GB", variant: "none"),
            .init(name: "English (Great Britain)+Annie", language: "en-GB", variant: "Annie"),
            .init(name: "OnlyName", language: "", variant: "none"),
            .init(name: "Two", language: "fields", variant: "none"),
            .init(name: "Extra", language: "x", variant: "y"),
        ])
        XCTAssertEqual(VoiceLister.parseVoiceLines([]), [])
    }

    func testSpeakDataEscapesDotLinesAndEndsWithTheMarker() {
        XCTAssertEqual(String(decoding: SSIPText.speakData("Hello"), as: UTF8.self), "Hello\r\n.\r\n")
        XCTAssertEqual(String(decoding: SSIPText.speakData(".start\n.\nmid.dle\r\n..x"), as: UTF8.self),
                       "..start\r\n..\r\nmid.dle\r\n...x\r\n.\r\n")
        XCTAssertEqual(String(decoding: SSIPText.command("SET", "self", "SYNTHESIS_VOICE", "a\r\nQUIT"), as: UTF8.self),
                       "SET self SYNTHESIS_VOICE a QUIT\r\n")
    }
}
