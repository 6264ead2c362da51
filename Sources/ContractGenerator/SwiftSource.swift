/// The Swift declarations of one interface file: an enum named after the interface holding each
/// member's typed declaration and the interface as introspection shows it; the reply structs of
/// methods that reply with several values; the protocol an object serving the interface conforms
/// to (one requirement per method) and the handlers made from such an object; and the errors the
/// file lists.
struct SwiftSource {
    private let file: InterfaceFile
    private let errors: ErrorList?
    private let source: String
    private let type: String
    private var out = ""

    static let summary = "org.voicebox.Summary"
    static let swiftType = "org.voicebox.SwiftType"

    init(_ file: InterfaceFile, errors: ErrorList?, source: String) {
        self.file = file
        self.errors = errors
        self.source = source
        type = SwiftNames.type(ofInterface: file.name)
    }

    mutating func text() throws -> String {
        out = "// Generated at build time from \(source) by ContractGenerator (Plugins/ContractPlugin):\n"
        out += "// edit the XML, not this.\n\n"
        try declarations()
        try protocolAndHandlers()
        if let errors { errorEnum(errors) }
        return out
    }

    // MARK: The members

    private mutating func declarations() throws {
        out += doc(file.comment.isEmpty ? "\(file.name), as \(source) declares it." : file.comment, indent: "")
        out += "public enum \(type) {\n"
        out += "    public static let interfaceName = \(SwiftNames.literal(file.name))\n"
        for member in file.members {
            out += "\n" + doc(member.comment, indent: "    ")
            try checkAnnotations(member)
            let summary = SwiftNames.literal(member.annotations[Self.summary] ?? "")
            let name = SwiftNames.member(member.name)
            switch member.kind {
            case .method:
                let inputs = try member.arguments.filter { !$0.isOutput }.map { try pair($0, of: member) }
                let outputs = member.arguments.filter(\.isOutput)
                var parts = [SwiftNames.literal(member.name), summary]
                if !inputs.isEmpty { parts.append("in: " + inputs.joined(separator: ", ")) }
                if outputs.count == 1 {
                    parts.append("out: " + (try pair(outputs[0], of: member)))
                } else if outputs.count > 1 {
                    parts.append("reply: \(replyType(member)).self")
                    parts.append("replyNames: [" + outputs.map { SwiftNames.literal($0.name) }.joined(separator: ", ") + "]")
                }
                out += "    public static let \(name) = BusMethod(\n        " + parts.joined(separator: ",\n        ") + ")\n"
            case .signal:
                let arguments = try member.arguments.map { try pair($0, of: member) }
                let parts = [SwiftNames.literal(member.name), summary] + arguments
                out += "    public static let \(name) = BusSignal(\n        " + parts.joined(separator: ",\n        ") + ")\n"
            case .property:
                guard member.access == "read" else {
                    throw GeneratorError("\(member.name): only read-only properties are served (access=\"read\")")
                }
                let swiftType = try self.swiftType(member.signature, annotation: Self.swiftType, of: member)
                let parts = [SwiftNames.literal(member.name), summary, "\(swiftType).self"]
                out += "    public static let \(name) = BusProperty(\n        " + parts.joined(separator: ", ") + ")\n"
            }
        }
        out += "\n    /// The interface as introspection shows it, in the XML's order.\n"
        out += "    public static let interface = InterfaceDescription(\n        name: interfaceName"
        for (kind, label) in [(InterfaceFile.Member.Kind.method, "methods"), (.signal, "signals"), (.property, "properties")] {
            let names = file.members.filter { $0.kind == kind }.map { SwiftNames.member($0.name) + ".description" }
            if !names.isEmpty { out += ",\n        \(label): [" + names.joined(separator: ", ") + "]" }
        }
        out += ")\n"
        for member in file.members where member.kind == .method && member.arguments.filter(\.isOutput).count > 1 {
            try reply(member)
        }
        out += "}\n"
    }

    /// `("text", String.self)`.
    private func pair(_ argument: InterfaceFile.Argument, of member: InterfaceFile.Member) throws -> String {
        "(\(SwiftNames.literal(argument.name)), \(try swiftType(argument, of: member)).self)"
    }

    private func swiftType(_ argument: InterfaceFile.Argument, of member: InterfaceFile.Member) throws -> String {
        try swiftType(argument.signature, annotation: "\(Self.swiftType).\(argument.name)", of: member)
    }

    private func swiftType(_ signature: String, annotation: String, of member: InterfaceFile.Member) throws -> String {
        if let named = member.annotations[annotation] { return named }
        guard let swiftType = SwiftNames.type(of: signature) else {
            throw GeneratorError("\(member.name): no Swift type for \"\(signature)\"; name one with \(annotation)")
        }
        return swiftType
    }

    /// An org.voicebox annotation the generator does not read is a mistake: say so.
    private func checkAnnotations(_ member: InterfaceFile.Member) throws {
        let known = [Self.summary, Self.swiftType] + member.arguments.map { "\(Self.swiftType).\($0.name)" }
        for name in member.annotations.keys where name.hasPrefix("org.voicebox.") && !known.contains(name) {
            throw GeneratorError("\(member.name): unknown annotation \(name)")
        }
        for name in member.annotations.keys where name == "org.freedesktop.DBus.Property.EmitsChangedSignal" {
            throw GeneratorError("\(member.name): every property announces its changes; \(name) is not served")
        }
    }

    private func replyType(_ member: InterfaceFile.Member) -> String { member.name + "Reply" }

    /// A struct for a reply of several values.
    private mutating func reply(_ member: InterfaceFile.Member) throws {
        let outputs = member.arguments.filter(\.isOutput)
        let fields = try outputs.map { (name: SwiftNames.argument($0.name), type: try swiftType($0, of: member)) }
        let name = replyType(member)
        out += "\n    /// \(member.name)'s reply.\n"
        out += "    public struct \(name): BusReply, Equatable {\n"
        for field in fields { out += "        public var \(field.name): \(field.type)\n" }
        out += "\n        public init(" + fields.map { "\($0.name): \($0.type)" }.joined(separator: ", ") + ") {\n"
        for field in fields { out += "            self.\(field.name) = \(field.name)\n" }
        out += "        }\n\n"
        let busTypes = fields.map { "\($0.type).busType" }.joined(separator: ", ")
        out += "        public static var busTypes: [DBusType] { [\(busTypes)] }\n\n"
        out += "        public init(busValues: [DBusValue]) throws(DBusError) {\n"
        let shape = SwiftNames.literal("\(member.name) replies with (" + outputs.map(\.signature).joined(separator: ", ") + ")")
        out += "            guard busValues.count == \(fields.count) else { throw .invalidArgs(\(shape)) }\n"
        for (index, field) in fields.enumerated() {
            out += "            \(field.name) = try \(field.type)(busValue: busValues[\(index)])\n"
        }
        out += "        }\n\n"
        let busValues = fields.map { "\($0.name).busValue" }.joined(separator: ", ")
        out += "        public var busValues: [DBusValue] { [\(busValues)] }\n"
        out += "    }\n"
    }

    // MARK: What serves it

    private mutating func protocolAndHandlers() throws {
        let methods = file.members.filter { $0.kind == .method }
        guard !methods.isEmpty else { return }
        let protocolName = type + "Methods"
        out += """

        /// What serves \(file.name):
        /// one requirement per method, so that an object that leaves one out does not compile.
        /// `caller` is the caller's unique bus name. A method that replies answers `.now`, or
        /// `.later` from a task of its own (the caller's next call does not wait for it); what a
        /// requirement throws is the error reply.
        public protocol \(protocolName): Sendable {

        """
        var handlers: [String] = []
        for method in methods {
            let (requirement, handler) = try requirementAndHandler(method)
            out += requirement
            handlers.append(handler)
        }
        out += "}\n\n"
        out += "extension \(type) {\n"
        out += "    /// The handlers of `object`, one per method, in the interface's order.\n"
        out += "    public static func implementations(of object: some \(protocolName)) -> [MethodImplementation] {\n"
        out += "        [\n" + handlers.joined(separator: "\n") + "\n        ]\n"
        out += "    }\n}\n"
    }

    /// One method's requirement in the protocol, and its line in `implementations(of:)`.
    private func requirementAndHandler(_ method: InterfaceFile.Member) throws -> (String, String) {
        let inputs = method.arguments.filter { !$0.isOutput }
        let outputs = method.arguments.filter(\.isOutput)
        var parameters: [String] = []
        var names: [String] = []
        for input in inputs {
            let name = SwiftNames.argument(input.name)
            guard name != "caller", name != "object" else {
                throw GeneratorError("\(method.name): an argument named \(input.name) clashes with the generated code's own")
            }
            parameters.append("\(name): \(try swiftType(input, of: method))")
            names.append(name)
        }
        parameters.append("caller: String")
        let swiftName = SwiftNames.member(method.name)
        var result = ""
        switch outputs.count {
        case 0: result = ""
        case 1: result = " -> MethodAnswer<\(try swiftType(outputs[0], of: method))>"
        default: result = " -> MethodAnswer<\(type).\(replyType(method))>"
        }
        let requirement = "    /// \(method.name)\(summaryLine(method))\n"
            + "    func \(swiftName)(" + parameters.joined(separator: ", ") + ") async throws\(result)\n"
        let closureParameters = (["caller"] + names).joined(separator: ", ")
        let call = "object.\(swiftName)(" + (names.map { "\($0): \($0)" } + ["caller: caller"]).joined(separator: ", ") + ")"
        return (requirement, "            \(swiftName).implementation { \(closureParameters) in try await \(call) },")
    }

    private func summaryLine(_ member: InterfaceFile.Member) -> String {
        guard let summary = member.annotations[Self.summary], !summary.isEmpty else { return "." }
        return ": " + summary
    }

    // MARK: The errors

    private mutating func errorEnum(_ errors: ErrorList) {
        out += "\nextension \(type) {\n"
        out += "    /// The errors a call can end with, each named \(errors.prefix).NAME, as \(source) lists them.\n"
        out += "    public enum ErrorName: String, Sendable, CaseIterable {\n"
        for entry in errors.entries {
            out += doc(entry.meaning.joined(separator: "\n"), indent: "        ")
            out += "        case \(SwiftNames.errorCase(entry.name)) = \(SwiftNames.literal(entry.name))\n"
        }
        out += "\n        /// e.g. \(SwiftNames.literal(errors.prefix + "." + errors.entries[0].name)).\n"
        out += "        public var dbusName: String { \(SwiftNames.literal(errors.prefix + ".")) + rawValue }\n"
        out += "    }\n}\n"
    }

    // MARK: Comments

    /// An XML comment as `///` lines: blank lines around it dropped, its common indentation removed.
    private func doc(_ comment: String, indent: String) -> String {
        var lines = comment.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        while let first = lines.first, first.allSatisfy(\.isWhitespace) { lines.removeFirst() }
        while let last = lines.last, last.allSatisfy(\.isWhitespace) { lines.removeLast() }
        guard !lines.isEmpty else { return "" }
        // The first line may follow "<!--" on its own line: it is trimmed apart.
        let first = lines.removeFirst().drop { $0 == " " }
        let rest = lines.filter { !$0.allSatisfy(\.isWhitespace) }
        let common = rest.map { $0.prefix { $0 == " " }.count }.min() ?? 0
        let body = [String(first)] + lines.map { $0.allSatisfy(\.isWhitespace) ? "" : String($0.dropFirst(common)) }
        return body.map { line in
            var trimmed = line
            while trimmed.last == " " { trimmed.removeLast() }
            return trimmed.isEmpty ? "\(indent)///\n" : "\(indent)/// \(trimmed)\n"
        }.joined()
    }
}
