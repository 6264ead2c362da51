import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import VoiceboxCore
import XCTest

/// The way a Spiel client first meets Voicebox: on a bus that knows the shipped activation files,
/// org.voicebox.Speech.Provider is among the activatable names ending in .Speech.Provider before
/// anything runs; the client's first GetAll starts voiceboxd, and gets the voices (the name is taken
/// once they are listed), announced before with PropertiesChanged carrying the list; what the
/// object introspects is the published interface; and it synthesizes.
final class SpielActivationTests: XCTestCase {
    static let root = Checkout.root

    func testASpielClientFindsTheProviderActivatesItAndIsServed() async throws {
        let stack = try Stack.require()
        let bus = try await ActivationBus(stack: stack, activating: ["org.voicebox.Speech1.service", "org.voicebox.Speech.Provider.service"])
        addTeardownBlock { bus.stop() }
        let client = try BusConnection(address: bus.address)
        let spiel = SpielClient(connection: client)
        let announced = Shared<[[ProviderVoice]]>([])
        _ = try await client.subscribe(SignalFilter(path: SpeechProvider.objectPath, interface: "org.freedesktop.DBus.Properties",
                                                    member: "PropertiesChanged")) { signal in
            if let changed = signal.arguments.dropFirst().first?.vardictEntries?["Voices"],
               let voices = try? [ProviderVoice](busValue: changed) {
                announced.withLock { $0.append(voices) }
            }
        }

        let names = try await spiel.providerNames()
        XCTAssertEqual(names, [SpeechProvider.busName], "libspiel would find \(names)")
        let (name, voices) = try await spiel.properties(of: SpeechProvider.busName, timeout: .seconds(40))
        let owner = try await client.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                          interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID",
                                          arguments: [.string(SpeechProvider.busName)])
        let pid = pid_t(try XCTUnwrap(owner.first?.uint32))
        addTeardownBlock { kill(pid, SIGTERM) }
        XCTAssertEqual(name, "Voicebox")
        XCTAssertGreaterThan(voices.count, 100, "the first GetAll found no voices")
        XCTAssertTrue(voices.contains { $0.id == SpielClient.voice })
        XCTAssertEqual(announced.value.last, voices, "PropertiesChanged did not carry the list")

        let xml = try await client.call(destination: SpeechProvider.busName, path: SpeechProvider.objectPath,
                                        interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
        let served = try InterfaceOutline.parse(Data((xml.first?.string ?? "").utf8))[SpeechProvider.interfaceName] ?? []
        let published = try InterfaceOutline.parse(Data(contentsOf: Self.root.appendingPathComponent(
            "dbus/org.freedesktop.Speech.Provider.xml")))[SpeechProvider.interfaceName] ?? []
        // (The published file's one annotation names a Qt type for Qt's code generator; it says
        // nothing on the bus.)
        XCTAssertEqual(served, published.filter { !$0.contains(" annotation ") })
        XCTAssertFalse(published.isEmpty)

        let text = "Activated by name."
        let fd = try await spiel.synthesize(SpeechProvider.busName, text: text, voice: SpielClient.voice)
        let stream = SpielStreamContents.parse(try await readAll(fd))
        close(fd)
        SpeechAudio(rate: 22050, samples: SpeechAudio.samples(stream.audio[...])).assertMatches(try SpeechAudio.espeak(text), text)
        await client.close()
        kill(pid, SIGTERM)
        try await waitUntil("the activated voiceboxd to exit") { kill(pid, 0) != 0 }
    }
}
