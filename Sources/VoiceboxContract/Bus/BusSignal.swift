/// One signal of an interface, declared once: name, typed arguments, a line of documentation.
public struct BusSignal<each Argument: BusArgument>: Sendable {
    public let name: String
    public let summary: String
    public let argumentNames: [String]

    public init(_ name: String, _ summary: String, _ arguments: repeat (String, (each Argument).Type)) {
        var names: [String] = []
        for argument in repeat each arguments { names.append(argument.0) }
        self.init(name, summary, argumentNames: names)
    }

    /// A signal declared elsewhere with these argument types (the service's own declarations).
    public init(_ name: String, _ summary: String, argumentNames: [String]) {
        self.name = name
        self.summary = summary
        self.argumentNames = argumentNames
    }

    public var description: InterfaceDescription.SignalDescription {
        var types: [DBusType] = []
        for type in repeat (each Argument).self { types.append(type.busType) }
        return .init(name, zip(argumentNames, types).map { .init($0, $1.signature) }, summary: summary)
    }

    public func encode(_ arguments: repeat each Argument) -> [DBusValue] {
        var values: [DBusValue] = []
        for argument in repeat each arguments { values.append(argument.busValue) }
        return values
    }

    /// The typed arguments of a received signal of this name; nil if they have another shape.
    public func decode(_ arguments: [DBusValue]) -> (repeat each Argument)? {
        var index = 0
        func next<T: BusArgument>(_ type: T.Type) throws(DBusError) -> T {
            guard index < arguments.count else { throw .invalidArgs("too few arguments") }
            defer { index += 1 }
            return try T(busValue: arguments[index])
        }
        return try? (repeat next((each Argument).self))
    }
}
