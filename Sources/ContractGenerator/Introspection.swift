import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// What an introspection XML declares, as read from it: the interface, its members in order with
/// the comment before each, and the comments outside the interface (where the errors are listed).
struct InterfaceFile {
    struct Argument {
        var name: String
        var signature: String
        var isOutput: Bool
    }

    struct Member {
        enum Kind: String { case method, signal, property }
        var kind: Kind
        var name: String
        var comment: String
        var arguments: [Argument] = []
        /// A property's type.
        var signature = ""
        var access = ""
        var annotations: [String: String] = [:]
    }

    var name = ""
    var comment = ""
    var members: [Member] = []
    var comments: [String] = []

    init() {}

    init(contentsOf url: URL) throws {
        let reader = Reader()
        let parser = XMLParser(data: try Data(contentsOf: url))
        parser.delegate = reader
        guard parser.parse() else {
            throw GeneratorError("\(url.lastPathComponent):\(parser.lineNumber): \(parser.parserError.map { "\($0)" } ?? "not XML")")
        }
        if let problem = reader.problem { throw GeneratorError("\(url.lastPathComponent): \(problem)") }
        guard reader.interfaces == 1 else {
            throw GeneratorError("\(url.lastPathComponent): one interface per file, found \(reader.interfaces)")
        }
        self = reader.file
    }
}

/// XMLParser's delegate: keeps the last comment until the element it stands before.
private final class Reader: NSObject, XMLParserDelegate {
    var file = InterfaceFile()
    var interfaces = 0
    var problem: String?
    private var comment = ""
    private var member: InterfaceFile.Member?
    /// Inside an element of another namespace (Telepathy's tp:flags): nothing there is read.
    private var foreignDepth = 0

    func parser(_ parser: XMLParser, foundComment comment: String) {
        file.comments.append(comment)
        self.comment = comment
    }

    func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        defer { comment = "" }
        if foreignDepth > 0 || element.contains(":") {
            foreignDepth += 1
            return
        }
        let name = attributes["name"] ?? ""
        switch element {
        case "node":
            break
        case "interface":
            interfaces += 1
            file.name = name
            file.comment = comment
        case "method", "signal":
            member = .init(kind: element == "method" ? .method : .signal, name: name, comment: comment)
        case "property":
            member = .init(kind: .property, name: name, comment: comment, signature: attributes["type"] ?? "",
                           access: attributes["access"] ?? "")
        case "arg":
            let isOutput = member?.kind == .method && attributes["direction"] == "out"
            member?.arguments.append(.init(name: name, signature: attributes["type"] ?? "", isOutput: isOutput))
        case "annotation":
            member?.annotations[name] = attributes["value"] ?? ""
        default:
            problem = problem ?? "line \(parser.lineNumber): <\(element)> is not read by the generator"
        }
    }

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        comment = ""
        if foreignDepth > 0 {
            foreignDepth -= 1
            return
        }
        if ["method", "signal", "property"].contains(element), let member {
            file.members.append(member)
            self.member = nil
        }
    }
}

struct GeneratorError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
