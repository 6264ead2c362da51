/// An enum that travels as its raw string.
public protocol StringCodedArgument: BusArgument, RawRepresentable<String> {}

extension StringCodedArgument {
    public static var busType: DBusType { .string }
    public var busValue: DBusValue { .string(rawValue) }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .string(let text) = busValue, let value = Self(rawValue: text) else {
            throw .invalidArgs("expected one of \(Self.self)'s names, got \(busValue)")
        }
        self = value
    }
}
