import Foundation
import FoundationXML
import VoiceboxBus
import VoiceboxContract
import VoiceboxCore
import XCTest

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
            case "annotation" where !name.hasPrefix("org.voicebox."):
                // (Ours are for the generator of the Swift declarations; the bus does not serve them.)
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
