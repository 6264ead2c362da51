/// What an exported interface offers. The introspection XML is generated from it and the
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
        public init(_ name: String, in inputs: [Argument] = [], out outputs: [Argument] = []) {
            self.name = name
            self.inputs = inputs
            self.outputs = outputs
        }
        public var inputSignature: String { inputs.map(\.type).joined() }
    }

    public struct SignalDescription: Sendable, Hashable {
        public var name: String
        public var arguments: [Argument]
        public init(_ name: String, _ arguments: [Argument] = []) {
            self.name = name
            self.arguments = arguments
        }
    }

    public struct Property: Sendable, Hashable {
        public var name: String
        public var type: String
        /// Whether PropertiesChanged carries new values (all of ours are read-only).
        public var emitsChanged: Bool
        public init(_ name: String, _ type: String, emitsChanged: Bool = true) {
            self.name = name
            self.type = type
            self.emitsChanged = emitsChanged
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
}
