import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import TestSupport
import VoiceboxContract
import XCTest

/// docs/api.md is written by hand; dbus/org.voicebox.Speech1.xml is the contract. The page must
/// document every method, signal and property of the XML with its signature, every option, reply
/// and signal key its comments document, and every error; and it must name nothing the XML lacks.
///
/// The page's shapes that are read here: a `### Name` heading per member, followed by its
/// signature in a code span (`Speak(s text, a{sv} options) → (t id)`, `SpeechMark(t id, s name)`,
/// `Version: s` with "(read-only)"); in that member's section, one table row per key, starting
/// "| `key` | `type` |"; and one row per error, starting "| `org.voicebox.Error.Name` |".
final class APIReferenceTests: XCTestCase {
    static let root = Checkout.root

    private var contract: Contract!
    private var page: ReferencePage!

    override func setUpWithError() throws {
        contract = try Contract(xml: Data(contentsOf: Self.root.appendingPathComponent("dbus/org.voicebox.Speech1.xml")))
        page = ReferencePage(try String(contentsOf: Self.root.appendingPathComponent("docs/api.md"), encoding: .utf8))
        // A parse that found nothing would make every check below pass.
        XCTAssertGreaterThan(contract.members.count, 20, "members read from the XML")
        XCTAssertGreaterThan(contract.members.reduce(0) { $0 + $1.keys.count }, 30, "documented keys read from the XML")
        XCTAssertGreaterThan(contract.errors.count, 5, "errors read from the XML")
    }

    func testEveryMemberIsDocumentedWithItsSignature() {
        for member in contract.members {
            guard let section = page.sections[member.name] else {
                XCTFail("docs/api.md has no '### \(member.name)' section (\(member.kind) of the XML)")
                continue
            }
            guard let line = section.first(where: { $0.contains("`\(member.signature)`") }) else {
                XCTFail("docs/api.md's \(member.name) section lacks its signature `\(member.signature)`")
                continue
            }
            if member.kind == .property {
                XCTAssertTrue(line.contains("(read-only)"), "\(member.name) is read-only in the XML: say so beside `\(member.signature)`")
            }
        }
    }

    func testEveryDocumentedKeyIsInItsMembersSection() {
        for member in contract.members {
            let rows = page.keyRows(of: member.name)
            for key in member.keys where !rows.contains(key) {
                XCTFail("docs/api.md's \(member.name) section lacks the row | `\(key.name)` | `\(key.type)` | the XML documents")
            }
        }
    }

    func testEveryErrorIsDocumented() {
        let rows = page.errorRows
        for error in contract.errors where !rows.contains(error) {
            XCTFail("docs/api.md's table of errors lacks the row | `org.voicebox.Error.\(error)` | the XML documents")
        }
    }

    /// The service's error names are generated from the same list (Plugins/ContractPlugin): the
    /// generator reads it as this test does.
    func testTheServicesErrorsAreTheListedOnes() {
        XCTAssertEqual(Set(VoiceboxError.Kind.allCases.map(\.rawValue)), contract.errors)
        XCTAssertEqual(VoiceboxError.Kind.busy.dbusName, "org.voicebox.Error.Busy")
    }

    func testThePageNamesNothingTheContractLacks() {
        let members = Set(contract.members.map(\.name))
        for heading in page.sections.keys where !members.contains(heading) {
            XCTFail("docs/api.md has a section '### \(heading)', which the XML does not declare")
        }
        for name in page.namedIdentifiers where !members.contains(name) && !contract.errors.contains(name) {
            XCTFail("docs/api.md names `\(name)`, which the XML declares neither as a member nor as an error")
        }
        for error in page.errorNames.union(page.errorRows) where !contract.errors.contains(error) {
            XCTFail("docs/api.md names org.voicebox.Error.\(error), which the XML does not document")
        }
        for member in contract.members {
            for key in page.keyRows(of: member.name) where !member.keys.contains(key) {
                XCTFail("docs/api.md's \(member.name) section has the row | `\(key.name)` | `\(key.type)` |, which the XML does not document")
            }
        }
    }
}

/// What the XML declares (its elements) and documents (its comments).
struct Contract {
    enum Kind: String { case method, signal, property }

    struct Key: Hashable {
        var name: String
        var type: String
    }

    struct Member {
        var kind: Kind
        var name: String
        /// `Name(type arg, …) → (type arg, …)`, `Name(type arg, …)` or `Name: type`.
        var signature: String
        /// Option, reply and signal keys listed in the comment right before the member.
        var keys: Set<Key>
    }

    var members: [Member]
    /// The names after org.voicebox.Error. in the comment's "Errors" list.
    var errors: Set<String>

    init(xml: Data) throws {
        let reader = ContractReader()
        let parser = XMLParser(data: xml)
        parser.delegate = reader
        guard parser.parse() else { throw parser.parserError ?? CocoaError(.coderReadCorrupt) }
        members = reader.members
        errors = reader.errors
    }

    /// Keys listed in a comment: lines indented 6 spaces, "name type description", under a line
    /// indented 4 that ends with ':' ("options (all optional):", "details:", "… info:").
    static func keys(inComment comment: String) -> Set<Key> {
        var keys: Set<Key> = []
        var inList = false
        for line in comment.split(separator: "\n", omittingEmptySubsequences: true) {
            let indent = line.prefix { $0 == " " }.count
            if indent == 4 { inList = line.hasSuffix(":") }
            if indent < 4 { inList = false }
            if inList, indent == 6, let match = line.wholeMatch(of: #/ {6}([a-z][a-z_]*) +([a-z{}()]+) +\S.*/#) {
                keys.insert(Key(name: String(match.1), type: String(match.2)))
            }
        }
        return keys
    }

    /// Errors listed in a comment: after "Errors (org.voicebox.Error.*):", lines indented 4 spaces
    /// that start with a name and two spaces.
    static func errors(inComment comment: String) -> Set<String> {
        guard let list = comment.range(of: "Errors (org.voicebox.Error.*):") else { return [] }
        var names: Set<String> = []
        for line in comment[list.upperBound...].split(separator: "\n") {
            if let match = line.wholeMatch(of: #/ {4}([A-Z][A-Za-z]+) {2,}\S.*/#) { names.insert(String(match.1)) }
        }
        return names
    }
}

/// Reads members, their arguments and the comment before each; errors from any comment.
private final class ContractReader: NSObject, XMLParserDelegate {
    var members: [Contract.Member] = []
    var errors: Set<String> = []
    private var comment = ""
    private var current: (kind: Contract.Kind, name: String, keys: Set<Contract.Key>)?
    private var inputs: [String] = []
    private var outputs: [String] = []

    func parser(_ parser: XMLParser, foundComment comment: String) {
        self.comment = comment
        errors.formUnion(Contract.errors(inComment: comment))
    }

    func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        switch element {
        case "method", "signal":
            current = (Contract.Kind(rawValue: element)!, attributes["name"] ?? "", Contract.keys(inComment: comment))
            inputs = []
            outputs = []
            comment = ""
        case "arg":
            let argument = "\(attributes["type"] ?? "") \(attributes["name"] ?? "")"
            if attributes["direction"] == "out" { outputs.append(argument) } else { inputs.append(argument) }
        case "property":
            let name = attributes["name"] ?? ""
            members.append(.init(kind: .property, name: name, signature: "\(name): \(attributes["type"] ?? "")",
                                 keys: Contract.keys(inComment: comment)))
            comment = ""
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        guard element == "method" || element == "signal", let member = current else { return }
        var signature = "\(member.name)(\(inputs.joined(separator: ", ")))"
        if !outputs.isEmpty { signature += " → (\(outputs.joined(separator: ", ")))" }
        members.append(.init(kind: member.kind, name: member.name, signature: signature, keys: member.keys))
        current = nil
    }
}

/// docs/api.md, read for what it names.
struct ReferencePage {
    let text: String
    /// Each `### Name` section's lines, up to the next heading of level 2 or 3.
    let sections: [String: [Substring]]

    init(_ text: String) {
        self.text = text
        var sections: [String: [Substring]] = [:]
        var current: String?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("### ") {
                current = String(line.dropFirst(4)).trimmingCharacters(in: .whitespaces)
                sections[current!] = []
            } else if line.hasPrefix("## ") || line.hasPrefix("# ") {
                current = nil
            } else if let current {
                sections[current, default: []].append(line)
            }
        }
        self.sections = sections
    }

    /// The "| `key` | `type` |" rows of a member's section.
    func keyRows(of member: String) -> Set<Contract.Key> {
        var rows: Set<Contract.Key> = []
        for line in sections[member] ?? [] {
            if let match = line.prefixMatch(of: #/\| `([a-z][a-z_]*)` \| `([^`]+)` \|/#) {
                rows.insert(Contract.Key(name: String(match.1), type: String(match.2)))
            }
        }
        return rows
    }

    /// What code spans name as a member: a span that is a capitalized identifier (`Speak`,
    /// `ListeningID`), or starts with one followed by '(' or ':' (`SpeechFinished(id, "error")`,
    /// `Version: s`). All-capital spans (`SIGSEGV`) name no member.
    var namedIdentifiers: Set<String> {
        var names: Set<String> = []
        for match in text.matches(of: #/`([^`\n]+)`/#) {
            guard let name = match.1.prefixMatch(of: #/[A-Z][A-Za-z]*[a-z][A-Za-z]*/#)?.0 else { continue }
            let rest = match.1[name.endIndex...]
            if rest.isEmpty || rest.hasPrefix("(") || rest.hasPrefix(":") { names.insert(String(name)) }
        }
        return names
    }

    /// The errors of the page's table: rows starting "| `org.voicebox.Error.Name` |".
    var errorRows: Set<String> {
        var names: Set<String> = []
        for line in text.split(separator: "\n") {
            if let match = line.prefixMatch(of: #/\| `org\.voicebox\.Error\.([A-Za-z]+)` \|/#) { names.insert(String(match.1)) }
        }
        return names
    }

    /// Every name after org.voicebox.Error. anywhere on the page.
    var errorNames: Set<String> {
        Set(text.matches(of: #/org\.voicebox\.Error\.([A-Za-z]+)/#).map { String($0.1) })
    }
}
