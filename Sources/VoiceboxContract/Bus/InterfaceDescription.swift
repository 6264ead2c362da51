/// What an exported interface offers, with the types erased: built from the typed declarations
/// (`BusMethod`, `BusSignal`, `BusProperty`). The introspection XML is generated from it and the
/// incoming calls are checked against it, so the two cannot disagree.
public struct InterfaceDescription: Sendable, Hashable {
    public struct Argument: Sendable, Hashable {
        public var name: String
        public var type: String
        public init(_ name: String, _ type: String) {
            self.name = name
            self.type = type
        }
    }

    public struct Method: Sendable, Hashable {
        public var name: String
        public var inputs: [Argument]
        public var outputs: [Argument]
        /// One line for people; introspection shows it as a comment.
        public var summary: String
        public init(_ name: String, in inputs: [Argument] = [], out outputs: [Argument] = [], summary: String = "") {
            self.name = name
            self.inputs = inputs
            self.outputs = outputs
            self.summary = summary
        }
        public var inputSignature: String { inputs.map(\.type).joined() }
    }

    public struct SignalDescription: Sendable, Hashable {
        public var name: String
        public var arguments: [Argument]
        public var summary: String
        public init(_ name: String, _ arguments: [Argument] = [], summary: String = "") {
            self.name = name
            self.arguments = arguments
            self.summary = summary
        }
    }

    public struct Property: Sendable, Hashable {
        public var name: String
        public var type: String
        /// Whether PropertiesChanged carries new values (all of ours are read-only).
        public var emitsChanged: Bool
        public var summary: String
        public init(_ name: String, _ type: String, emitsChanged: Bool = true, summary: String = "") {
            self.name = name
            self.type = type
            self.emitsChanged = emitsChanged
            self.summary = summary
        }
    }

    public var name: String
    public var methods: [Method]
    public var signals: [SignalDescription]
    public var properties: [Property]

    public init(name: String, methods: [Method] = [], signals: [SignalDescription] = [], properties: [Property] = []) {
        self.name = name
        self.methods = methods
        self.signals = signals
        self.properties = properties
    }

    public func method(named name: String) -> Method? { methods.first { $0.name == name } }
    public func property(named name: String) -> Property? { properties.first { $0.name == name } }
    public func signal(named name: String) -> SignalDescription? { signals.first { $0.name == name } }
}
