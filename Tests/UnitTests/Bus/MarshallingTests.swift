@testable import TestSupport
import CDBus
import Glibc
import VoiceboxContract
import XCTest
@testable import VoiceboxBus

/// Values go into a real libdbus message and come back out unchanged; invalid ones are
/// refused with an error before libdbus (which would abort) ever sees them.
final class MarshallingTests: XCTestCase {
    private func roundTrip(_ values: [DBusValue], file: StaticString = #filePath, line: UInt = #line) throws -> [DBusValue] {
        let message = try BusConnection.makeSignal(path: "/t", interface: "org.voicebox.Test", member: "T", arguments: values)
        XCTAssertEqual(String(cString: dbus_message_get_signature(message.pointer)), values.map(\.type.signature).joined(),
                       file: file, line: line)
        return try Marshalling.read(message.pointer)
    }

    private func assertRoundTrip(_ values: [DBusValue], file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try roundTrip(values, file: file, line: line), values, file: file, line: line)
    }

    func testEveryBasicTypeAtItsLimits() throws {
        try assertRoundTrip([
            .byte(0), .byte(.max), .boolean(true), .boolean(false),
            .int16(.min), .int16(.max), .uint16(0), .uint16(.max),
            .int32(.min), .int32(.max), .uint32(0), .uint32(.max),
            .int64(.min), .int64(.max), .uint64(0), .uint64(.max),
            .double(-.greatestFiniteMagnitude), .double(.leastNonzeroMagnitude), .double(.infinity), .double(-0.0),
            .string(""), .string("Grüße, 世界 🎙"), .objectPath("/"), .objectPath("/org/voicebox/Speech1"),
            .signature(""), .signature("a{sv}(iu)"),
        ])
    }

    func testNaNSurvives() throws {
        let back = try roundTrip([.double(.nan)])
        XCTAssertTrue(back.first?.double?.isNaN == true)
    }

    func testEmptyContainersKeepTheirTypes() throws {
        try assertRoundTrip([
            .array(.string, []), .array(.array(.structure([.string, .double])), []),
            .dictionary(key: .string, value: .variant, []), .vardict([:]),
            .dictionary(key: .uint64, value: .array(.byte), []),
        ])
    }

    func testNestedContainers() throws {
        let inner = DBusValue.vardict(["rate": .double(1.5), "ssml": .boolean(true), "voice": .string("espeak-ng/English")])
        try assertRoundTrip([
            .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), [DBusDictEntry(.string("a"), inner)]),
            .array(.structure([.string, .double, .double]), [
                .structure([.string("go"), .double(0.1), .double(0.4)]),
                .structure([.string("forward"), .double(0.4), .double(0.9)]),
            ]),
            .structure([.int32(1), .structure([.array(.int32, [.int32(2), .int32(3)]), .variant(.string("x"))])]),
        ])
    }

    func testVariantsInVariants() throws {
        try assertRoundTrip([
            .variant(.variant(.variant(.uint32(7)))),
            .variant(.array(.variant, [.variant(.string("a")), .variant(.int64(-1))])),
            .vardict(["nested": .variant(.vardict(["deeper": .boolean(true)]))]),
        ])
    }

    /// libdbus hands out a duplicate of each descriptor: it goes to whoever reads the message,
    /// and the plain read (replies, signals) closes it at once, so none is ever left open.
    func testReceivedDescriptorsAreHandedOverOrClosed() throws {
        let fd = open("/dev/null", O_RDONLY)
        defer { close(fd) }
        let message = try BusConnection.makeSignal(path: "/t", interface: "org.voicebox.Test", member: "T",
                                                   arguments: [.vardict(["fd": .unixFD(fd)])])
        var descriptors: [Int32] = []
        let kept = try Marshalling.read(message.pointer, descriptors: &descriptors)
        XCTAssertEqual(descriptors.count, 1)
        guard let received = descriptors.first else { return }
        XCTAssertEqual(kept.first?.vardictEntries?["fd"], .unixFD(received))
        XCTAssertNotEqual(received, fd)
        XCTAssertGreaterThanOrEqual(fcntl(received, F_GETFD), 0, "the handed-over descriptor must be open")
        close(received)

        guard case .unixFD(let closedOnRead)? = try Marshalling.read(message.pointer).first?.vardictEntries?["fd"] else {
            return XCTFail("no descriptor read")
        }
        XCTAssertEqual(fcntl(closedOnRead, F_GETFD), -1, "the plain read must close what it took")
    }

    func testInvalidValuesAreRefusedNotCrashed() {
        let invalid: [(String, DBusValue)] = [
            ("NUL in string", .string("a\0b")),
            ("relative path", .objectPath("org/voicebox")),
            ("trailing slash", .objectPath("/org/")),
            ("double slash", .objectPath("/org//x")),
            ("bad char in path", .objectPath("/org/voice-box")),
            ("bad signature", .signature("a{vs}")),
            ("unclosed struct", .signature("(ii")),
            ("array of mixed types", .array(.string, [.string("a"), .int32(1)])),
            ("dict with a non-basic key", .dictionary(key: .variant, value: .string, [])),
            ("dict entry of wrong type", .dictionary(key: .string, value: .variant, [DBusDictEntry(.string("k"), .string("not a variant"))])),
            ("empty struct", .structure([])),
            ("negative fd", .unixFD(-1)),
            ("variants 70 deep", (0..<70).reduce(DBusValue.byte(1)) { value, _ in .variant(value) }),
            ("arrays 33 deep", (0..<33).reduce(DBusValue.array(.byte, [])) { value, _ in .array(value.type, [value]) }),
        ]
        for (what, value) in invalid {
            XCTAssertThrowsError(try BusConnection.makeSignal(path: "/t", interface: "org.voicebox.Test", member: "T", arguments: [value]),
                                 what)
        }
    }

    func testValidDeepNestingStillWorks() throws {
        let deep = (0..<30).reduce(DBusValue.byte(1)) { value, _ in .variant(value) }
        try assertRoundTrip([deep])
    }

    func testInvalidNamesAreRefused() {
        XCTAssertThrowsError(try BusConnection.makeSignal(path: "/t", interface: "no_dots", member: "T", arguments: []))
        XCTAssertThrowsError(try BusConnection.makeSignal(path: "/t", interface: "org.voicebox.Test", member: "Bad.Member", arguments: []))
        XCTAssertThrowsError(try BusConnection.makeCall(destination: "not a name", path: "/", interface: "a.b", member: "M", arguments: []))
    }
}

final class SignatureTests: XCTestCase {
    func testParsesCompleteTypes() throws {
        XCTAssertEqual(try DBusType.parseList("sa{sv}"), [.string, .dictionary(key: .string, value: .variant)])
        XCTAssertEqual(try DBusType.parse("a(sdd)"), .array(.structure([.string, .double, .double])))
        XCTAssertEqual(try DBusType.parseList(""), [])
        for signature in ["a{sv}", "a(sssss)", "(t(s)a{ua{sv}})", "aay", "h"] {
            XCTAssertEqual(try DBusType.parseList(signature).map(\.signature).joined(), signature)
        }
    }

    func testRejectsMalformedSignatures() {
        for bad in ["a", "a{s}", "a{svs}", "{sv}", "()", "(s", "s)", "z", "a{(s)v}", String(repeating: "a", count: 33) + "y",
                    String(repeating: "(", count: 33) + "y" + String(repeating: ")", count: 33), String(repeating: "y", count: 256)] {
            XCTAssertThrowsError(try DBusType.parseList(bad), bad)
        }
    }
}
