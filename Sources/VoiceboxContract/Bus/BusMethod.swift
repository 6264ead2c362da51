/// One method of an interface, declared once: its name, typed arguments, reply and a line of
/// documentation. Introspection, the signature check, decoding into typed arguments, the
/// handler's shape (`MethodHandler`) and the typed client call (`BusProxy`) all come from it.
public struct BusMethod<each Input: BusArgument, Output: BusReply>: Sendable {
    public let name: String
    public let summary: String
    public let inputNames: [String]
    public let outputNames: [String]

    /// A method whose reply is one named value.
    public init(_ name: String, _ summary: String, in inputs: repeat (String, (each Input).Type),
                out output: (String, Output.Type)) where Output: BusArgument {
        self.init(name, summary, inputNames: Self.names(repeat each inputs), outputNames: [output.0])
    }

    /// A method whose reply is `NoReply` or a struct that names its own values.
    public init(_ name: String, _ summary: String, in inputs: repeat (String, (each Input).Type),
                reply: Output.Type = NoReply.self, replyNames: [String] = []) {
        self.init(name, summary, inputNames: Self.names(repeat each inputs), outputNames: replyNames)
    }

    private init(_ name: String, _ summary: String, inputNames: [String], outputNames: [String]) {
        precondition(outputNames.count == Output.busTypes.count, "\(name): one name for each reply value")
        self.name = name
        self.summary = summary
        self.inputNames = inputNames
        self.outputNames = outputNames
    }

    private static func names(_ inputs: repeat (String, (each Input).Type)) -> [String] {
        var names: [String] = []
        for input in repeat each inputs { names.append(input.0) }
        return names
    }

    public static var inputTypes: [DBusType] {
        var types: [DBusType] = []
        for type in repeat (each Input).self { types.append(type.busType) }
        return types
    }

    /// As introspection shows it.
    public var description: InterfaceDescription.Method {
        InterfaceDescription.Method(name, in: zip(inputNames, Self.inputTypes).map { .init($0, $1.signature) },
                                    out: zip(outputNames, Output.busTypes).map { .init($0, $1.signature) },
                                    summary: summary)
    }

    /// Decodes a call's arguments; the count and signature were checked against `description`.
    public func decode(_ values: [DBusValue]) throws(DBusError) -> (repeat each Input) {
        var index = 0
        func next<T: BusArgument>(_ type: T.Type) throws(DBusError) -> T {
            guard index < values.count else { throw .invalidArgs("\(name) takes \(inputNames.count) arguments") }
            defer { index += 1 }
            return try T(busValue: values[index])
        }
        return (repeat try next((each Input).self))
    }

    public func encode(_ inputs: repeat each Input) -> [DBusValue] {
        var values: [DBusValue] = []
        for input in repeat each inputs { values.append(input.busValue) }
        return values
    }
}
