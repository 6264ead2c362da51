@testable import TestSupport
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import VoiceboxBus
import VoiceboxContract
import VoiceboxCore
import XCTest

/// dbus/org.voicebox.Speech1.xml is the contract: what voiceboxd serves must say the same,
/// member by member, argument by argument.
final class ContractTests: XCTestCase {
    static var contractURL: URL {
        Checkout.root.appendingPathComponent("dbus/org.voicebox.Speech1.xml")
    }

    func testServedInterfaceMatchesTheContractFile() throws {
        let contract = try InterfaceOutline.parse(Data(contentsOf: Self.contractURL))
        let served = try InterfaceOutline.parse(Data(Introspection.xml(interfaces: [Speech1.interface]).utf8))
        XCTAssertFalse(contract["org.voicebox.Speech1", default: []].isEmpty, "the contract file declares nothing")
        XCTAssertEqual(served["org.voicebox.Speech1"], contract["org.voicebox.Speech1"])
    }

    /// The Swift declarations are generated from the file (Plugins/ContractPlugin); the types the
    /// XML names for some arguments (org.voicebox.SwiftType) travel as the contract documents:
    /// AudioInterruption's info as its dictionary, whole, should_resume only on `ended`.
    func testTheValuesTravelAsTheContractSays() throws {
        XCTAssertEqual(Speech1.audioInterruption.description.arguments.map(\.type), ["s", "a{sv}"])
        XCTAssertEqual(Speech1.speechFinished.description.arguments.map(\.type), ["t", "s"])
        let ended = InterruptionInfo(reason: .speaking, id: 7, shouldResume: true, pausedPlayers: ["org.mpris.MediaPlayer2.mpv"],
                                     mutedStreams: 1, duckedStreams: 2, corkedStreams: 3)
        let entries = try XCTUnwrap(try? VarDict(busValue: ended.busValue)).entries
        XCTAssertEqual(Set(entries.keys), ["reason", "id", "should_resume", "paused_players", "muted_streams",
                                           "ducked_streams", "corked_streams"])
        XCTAssertEqual(try InterruptionInfo(busValue: ended.busValue), ended)
        let began = InterruptionInfo(reason: .listening, id: 8)
        XCTAssertNil(try VarDict(busValue: began.busValue).entries["should_resume"])
        XCTAssertEqual(try InterruptionInfo(busValue: began.busValue), began)
        XCTAssertEqual(try SynthesisEnd(busValue: .string("cancelled")), .cancelled)
        XCTAssertThrowsError(try SynthesisEnd(busValue: .string("exploded")))
    }

    /// The same over a live bus: what a client introspecting the running service gets.
    func testRunningServiceServesTheContract() async throws {
        let stack = try Stack.require()
        let service = try await startService(on: stack)
        let xml = try await service.client.call(destination: ServiceHarness.name, path: ServiceHarness.path,
                                                interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
        let served = try InterfaceOutline.parse(Data((xml.first?.string ?? "").utf8))
        let contract = try InterfaceOutline.parse(Data(contentsOf: Self.contractURL))
        XCTAssertEqual(served["org.voicebox.Speech1"], contract["org.voicebox.Speech1"])
        XCTAssertNotNil(served["org.freedesktop.DBus.Properties"])
    }
}
