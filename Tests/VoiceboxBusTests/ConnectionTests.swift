import Foundation
import Synchronization
import XCTest
@testable import VoiceboxBus

/// The connection against a real dbus-daemon: exported objects, properties, introspection,
/// signals, late replies from other threads, errors and peers leaving.
final class ConnectionTests: XCTestCase {
    static let interface = InterfaceDescription(
        name: "org.voicebox.Test",
        methods: [
            .init("Echo", in: [.init("value", "v")], out: [.init("value", "v")]),
            .init("Later", in: [.init("delay", "d")], out: [.init("text", "s")]),
            .init("Fail"),
            .init("Forget"),
        ],
        signals: [.init("Ping", [.init("n", "u")])],
        properties: [.init("Count", "u"), .init("Name", "s")])

    var bus: PrivateBus!
    var server: BusConnection!
    var client: BusConnection!
    var object: ExportedObject!

    override func setUp() async throws {
        bus = try PrivateBus()
        server = try BusConnection(address: bus.address)
        client = try BusConnection(address: bus.address)
        object = try server.export(path: "/org/voicebox/Test", interfaces: [Self.interface]) { call in
            switch call.member {
            case "Echo": call.reply(call.arguments)
            case "Later":
                let delay = call.arguments[0].double ?? 0
                DispatchQueue.global().asyncAfter(deadline: .now() + delay) { call.reply([.string("later")]) }
            case "Fail": call.fail(DBusError(name: "org.voicebox.Error.Test", message: "as asked"))
            default: break  // "Forget": dropped unanswered
            }
        }
        object.setProperty("Count", of: "org.voicebox.Test", to: .uint32(1))
        object.setProperty("Name", of: "org.voicebox.Test", to: .string("test"))
        // One round trip: the server has now sent everything set up above.
        _ = try await call("Get", [.string("org.voicebox.Test"), .string("Count")], interface: "org.freedesktop.DBus.Properties")
    }

    override func tearDown() async throws {
        await client?.close()
        await server?.close()
        object = nil
        client = nil
        server = nil
        bus = nil
    }

    private func call(_ member: String, _ args: [DBusValue] = [], interface: String = "org.voicebox.Test",
                      path: String = "/org/voicebox/Test") async throws -> [DBusValue] {
        try await client.call(destination: server.uniqueName, path: path, interface: interface, member: member, arguments: args)
    }

    private func assertError(_ name: String, _ body: () async throws -> Void, file: StaticString = #filePath, line: UInt = #line) async {
        do {
            try await body()
            XCTFail("expected \(name)", file: file, line: line)
        } catch let error as DBusError {
            XCTAssertEqual(error.name, name, error.message, file: file, line: line)
        } catch {
            XCTFail("unexpected \(error)", file: file, line: line)
        }
    }

    func testEchoRoundTripsNestedValuesOverTheBus() async throws {
        let value = DBusValue.variant(.vardict(["a": .array(.structure([.string, .double]), [.structure([.string("x"), .double(1.5)])]),
                                                "b": .variant(.uint64(.max))]))
        let back = try await call("Echo", [value])
        XCTAssertEqual(back, [value])
    }

    func testRepliesSentLaterFromAnotherThread() async throws {
        let client = client!, name = server.uniqueName
        @Sendable func later(_ delay: Double) async throws -> [DBusValue] {
            try await client.call(destination: name, path: "/org/voicebox/Test", interface: "org.voicebox.Test",
                                  member: "Later", arguments: [.double(delay)])
        }
        async let slow = later(0.3)
        async let fast = later(0.0)
        let (a, b) = try await (slow, fast)
        XCTAssertEqual(a, [.string("later")])
        XCTAssertEqual(b, [.string("later")])
    }

    func testErrors() async throws {
        await assertError("org.voicebox.Error.Test") { _ = try await self.call("Fail") }
        await assertError("org.freedesktop.DBus.Error.UnknownMethod") { _ = try await self.call("Nope") }
        await assertError("org.freedesktop.DBus.Error.UnknownInterface") { _ = try await self.call("Echo", interface: "org.voicebox.Other") }
        await assertError("org.freedesktop.DBus.Error.UnknownObject") { _ = try await self.call("Echo", path: "/nowhere") }
        await assertError("org.freedesktop.DBus.Error.InvalidArgs") { _ = try await self.call("Echo", [.string("not a variant")]) }
        await assertError("org.freedesktop.DBus.Error.Failed") { _ = try await self.call("Forget") }
        // The object still serves after all that.
        let back = try await call("Echo", [.variant(.boolean(true))])
        XCTAssertEqual(back, [.variant(.boolean(true))])
    }

    func testProperties() async throws {
        let props = "org.freedesktop.DBus.Properties"
        let count = try await call("Get", [.string("org.voicebox.Test"), .string("Count")], interface: props)
        XCTAssertEqual(count, [.variant(.uint32(1))])
        let all = try await call("GetAll", [.string("org.voicebox.Test")], interface: props)
        XCTAssertEqual(all.first?.vardictEntries, ["Count": .uint32(1), "Name": .string("test")])
        await assertError("org.freedesktop.DBus.Error.PropertyReadOnly") {
            _ = try await self.call("Set", [.string("org.voicebox.Test"), .string("Count"), .variant(.uint32(2))], interface: props)
        }
        await assertError("org.freedesktop.DBus.Error.UnknownProperty") {
            _ = try await self.call("Get", [.string("org.voicebox.Test"), .string("Nope")], interface: props)
        }
    }

    func testPropertiesChangedOnlyWhenTheValueChanges() async throws {
        let received = Mutex<[Signal]>([])
        _ = try await client.subscribe(SignalFilter(interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged")) { signal in
            received.withLock { $0.append(signal) }
        }
        object.setProperty("Count", of: "org.voicebox.Test", to: .uint32(1))  // unchanged: no signal
        object.setProperty("Count", of: "org.voicebox.Test", to: .uint32(2))
        try await waitUntil { received.withLock { !$0.isEmpty } }
        try await Task.sleep(for: .milliseconds(100))
        let signals = received.withLock { $0 }
        XCTAssertEqual(signals.count, 1)
        XCTAssertEqual(signals.first?.arguments.first, .string("org.voicebox.Test"))
        XCTAssertEqual(signals.first?.arguments[1].vardictEntries, ["Count": .uint32(2)])
    }

    func testIntrospectionListsInterfacesAndChildren() async throws {
        let xml = try await call("Introspect", interface: "org.freedesktop.DBus.Introspectable").first?.string ?? ""
        XCTAssertTrue(xml.contains("<interface name=\"org.voicebox.Test\">"))
        XCTAssertTrue(xml.contains("<method name=\"Echo\">"))
        XCTAssertTrue(xml.contains("<interface name=\"org.freedesktop.DBus.Properties\">"))
        let root = try await call("Introspect", interface: "org.freedesktop.DBus.Introspectable", path: "/org/voicebox").first?.string ?? ""
        XCTAssertTrue(root.contains("<node name=\"Test\"/>"), root)
    }

    func testPeerIsPingedByLibdbus() async throws {
        let reply = try await call("Ping", interface: "org.freedesktop.DBus.Peer")
        XCTAssertEqual(reply, [])
    }

    func testSignalsArriveInOrder() async throws {
        let received = Mutex<[UInt32]>([])
        _ = try await client.subscribe(SignalFilter(interface: "org.voicebox.Test", member: "Ping")) { signal in
            if let n = signal.arguments.first?.uint32 { received.withLock { $0.append(n) } }
        }
        for n in 0..<200 { server.emit(path: "/org/voicebox/Test", interface: "org.voicebox.Test", member: "Ping", arguments: [.uint32(UInt32(n))]) }
        try await waitUntil { received.withLock { $0.count == 200 } }
        XCTAssertEqual(received.withLock { $0 }, (0..<200).map(UInt32.init))
    }

    func testPeerLeavingIsNoticed() async throws {
        let leaver = try BusConnection(address: bus.address)
        let gone = Mutex<[String]>([])
        _ = server.watchPeer(leaver.uniqueName) { name in gone.withLock { $0.append(name) } }
        try await Task.sleep(for: .milliseconds(50))
        XCTAssertEqual(gone.withLock { $0 }, [])
        let started = ContinuousClock.now
        await leaver.close()
        try await waitUntil { gone.withLock { !$0.isEmpty } }
        XCTAssertEqual(gone.withLock { $0 }, [leaver.uniqueName])
        XCTAssertLessThan(ContinuousClock.now - started, .milliseconds(200))
    }

    func testWatchingAPeerThatAlreadyLeftFiresAtOnce() async throws {
        let gone = Mutex<Bool>(false)
        _ = server.watchPeer(":1.9999") { _ in gone.withLock { $0 = true } }
        try await waitUntil { gone.withLock { $0 } }
    }

    func testPendingCallsFailWhenTheConnectionClosesAndLaterCallsFailAtOnce() async throws {
        let client = try BusConnection(address: bus.address), name = server.uniqueName
        let pending = Task {
            try await client.call(destination: name, path: "/org/voicebox/Test", interface: "org.voicebox.Test",
                                  member: "Later", arguments: [.double(2)])
        }
        try await Task.sleep(for: .milliseconds(100))
        await client.close()
        await assertError("org.freedesktop.DBus.Error.Disconnected") { _ = try await pending.value }
        await assertError("org.freedesktop.DBus.Error.Disconnected") {
            _ = try await client.call(destination: name, path: "/org/voicebox/Test", interface: "org.voicebox.Test", member: "Fail")
        }
        await client.close()  // twice is harmless
    }

    func testNameOwnership() async throws {
        let first = try await server.requestName("org.voicebox.TestName")
        XCTAssertEqual(first, .primaryOwner)
        let second = try await client.requestName("org.voicebox.TestName")
        XCTAssertEqual(second, .taken)
        try await server.releaseName("org.voicebox.TestName")
        let third = try await client.requestName("org.voicebox.TestName")
        XCTAssertEqual(third, .primaryOwner)
    }
}

func waitUntil(timeout: Duration = .seconds(5), _ condition: @Sendable () -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !condition() {
        guard ContinuousClock.now < deadline else { throw XCTSkip.timedOut }
        try await Task.sleep(for: .milliseconds(5))
    }
}

extension XCTSkip {
    struct TimedOut: Error, CustomStringConvertible { var description: String { "condition not met in time" } }
    static let timedOut = TimedOut()
}
