/// One read-only property, declared once: name, type, documentation. Every change is announced
/// with PropertiesChanged carrying the new value.
public struct BusProperty<Value: BusArgument>: Sendable {
    public let name: String
    public let summary: String

    public init(_ name: String, _ summary: String, _ type: Value.Type) {
        self.name = name
        self.summary = summary
    }

    public var description: InterfaceDescription.Property {
        .init(name, Value.busType.signature, summary: summary)
    }
}
