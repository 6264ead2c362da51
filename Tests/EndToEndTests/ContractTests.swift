import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import VoiceboxBus
import VoiceboxInterface
import XCTest

/// dbus/org.voicebox.Speech1.xml is the contract: what voiceboxd serves must say the same,
/// member by member, argument by argument.
final class ContractTests: XCTestCase {
    static var contractURL: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("dbus/org.voicebox.Speech1.xml")
    }

    func testServedInterfaceMatchesTheContractFile() throws {
        let contract = try InterfaceOutline.parse(Data(contentsOf: Self.contractURL))
        let served = try InterfaceOutline.parse(Data(Introspection.xml(interfaces: [Speech1.interface]).utf8))
        XCTAssertFalse(contract["org.voicebox.Speech1", default: []].isEmpty, "the contract file declares nothing")
        XCTAssertEqual(served["org.voicebox.Speech1"], contract["org.voicebox.Speech1"])
    }

    /// The same over a live bus: what a client introspecting the running service gets.
    func testRunningServiceServesTheContract() async throws {
        let stack = try Stack.require()
        let service = try await ServiceHarness(stack: stack)
        let xml = try await service.client.call(destination: ServiceHarness.name, path: ServiceHarness.path,
                                                interface: "org.freedesktop.DBus.Introspectable", member: "Introspect")
        await service.stop()
        let served = try InterfaceOutline.parse(Data((xml.first?.string ?? "").utf8))
        let contract = try InterfaceOutline.parse(Data(contentsOf: Self.contractURL))
        XCTAssertEqual(served["org.voicebox.Speech1"], contract["org.voicebox.Speech1"])
        XCTAssertNotNil(served["org.freedesktop.DBus.Properties"])
    }
}

/// An introspection document reduced to comparable lines: "method Speak in text s", ...
enum InterfaceOutline {
    static func parse(_ data: Data) throws -> [String: [String]] {
        let delegate = Collector()
        let parser = XMLParser(data: data)
        parser.delegate = delegate
        guard parser.parse() else { throw parser.parserError ?? CocoaError(.coderReadCorrupt) }
        return delegate.interfaces
    }

    private final class Collector: NSObject, XMLParserDelegate {
        var interfaces: [String: [String]] = [:]
        var interface: String?
        var member = ""

        func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                    attributes: [String: String] = [:]) {
            let name = attributes["name"] ?? ""
            switch element {
            case "interface":
                interface = name
                interfaces[name] = []
            case "method", "signal":
                member = "\(element) \(name)"
                interfaces[interface ?? ""]?.append(member)
            case "property":
                member = "property \(name) \(attributes["type"] ?? "") \(attributes["access"] ?? "")"
                interfaces[interface ?? ""]?.append(member)
            case "arg":
                interfaces[interface ?? ""]?.append("\(member) arg \(name) \(attributes["type"] ?? "") \(attributes["direction"] ?? (member.hasPrefix("signal") ? "" : "in"))")
            case "annotation":
                interfaces[interface ?? ""]?.append("\(member) annotation \(name)=\(attributes["value"] ?? "")")
            default:
                break
            }
        }

        func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
            if element == "interface" { interface = nil }
        }
    }
}
