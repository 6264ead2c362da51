/// A Swift type that stands for one D-Bus type: it names its signature, decodes from a
/// received value and encodes to one. Methods, signals and properties are declared with them,
/// so that the declared signature and the decoding cannot disagree.
public protocol BusArgument: Sendable {
    static var busType: DBusType { get }
    /// Decodes a value of `busType` (the message's signature was checked before).
    init(busValue: DBusValue) throws(DBusError)
    var busValue: DBusValue { get }
}

extension BusArgument {
    static func mismatch(_ value: DBusValue) -> DBusError {
        .invalidArgs("expected \(busType), got \(value.type)")
    }
}

extension String: BusArgument {
    public static var busType: DBusType { .string }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .string(let value) = busValue else { throw Self.mismatch(busValue) }
        self = value
    }
    public var busValue: DBusValue { .string(self) }
}

extension Bool: BusArgument {
    public static var busType: DBusType { .boolean }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .boolean(let value) = busValue else { throw Self.mismatch(busValue) }
        self = value
    }
    public var busValue: DBusValue { .boolean(self) }
}

extension Int32: BusArgument {
    public static var busType: DBusType { .int32 }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .int32(let value) = busValue else { throw Self.mismatch(busValue) }
        self = value
    }
    public var busValue: DBusValue { .int32(self) }
}

extension UInt32: BusArgument {
    public static var busType: DBusType { .uint32 }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .uint32(let value) = busValue else { throw Self.mismatch(busValue) }
        self = value
    }
    public var busValue: DBusValue { .uint32(self) }
}

extension UInt64: BusArgument {
    public static var busType: DBusType { .uint64 }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .uint64(let value) = busValue else { throw Self.mismatch(busValue) }
        self = value
    }
    public var busValue: DBusValue { .uint64(self) }
}

extension Double: BusArgument {
    public static var busType: DBusType { .double }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .double(let value) = busValue else { throw Self.mismatch(busValue) }
        self = value
    }
    public var busValue: DBusValue { .double(self) }
}

extension Array: BusArgument where Element: BusArgument {
    public static var busType: DBusType { .array(Element.busType) }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .array(_, let items) = busValue else { throw Self.mismatch(busValue) }
        var decoded: [Element] = []
        decoded.reserveCapacity(items.count)
        for item in items { decoded.append(try Element(busValue: item)) }
        self = decoded
    }
    public var busValue: DBusValue { .array(Element.busType, map(\.busValue)) }
}

/// `a{sv}`: options and details. Variants are unwrapped one level; a repeated key keeps its
/// last value, as most D-Bus bindings do.
public struct VarDict: BusArgument, Equatable {
    public var entries: [String: DBusValue]

    public init(_ entries: [String: DBusValue] = [:]) { self.entries = entries }

    public static var busType: DBusType { .dictionary(key: .string, value: .variant) }
    public init(busValue: DBusValue) throws(DBusError) {
        guard let entries = busValue.vardictEntries else { throw Self.mismatch(busValue) }
        self.entries = entries
    }
    public var busValue: DBusValue { .vardict(entries) }

    public subscript(key: String) -> DBusValue? {
        get { entries[key] }
        set { entries[key] = newValue }
    }
}

/// `v`: a value of any type, as the caller sent it.
public struct Variant: BusArgument, Equatable {
    public var value: DBusValue

    public init(_ value: DBusValue) { self.value = value }

    public static var busType: DBusType { .variant }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .variant(let inner) = busValue else { throw Self.mismatch(busValue) }
        value = inner
    }
    public var busValue: DBusValue { .variant(value) }
}
extension Variant: BusReply {}

/// `o`: an object path (IBus's factory answers CreateEngine with one).
public struct ObjectPath: BusArgument, BusReply, Equatable {
    public var path: String

    public init(_ path: String) { self.path = path }

    public static var busType: DBusType { .objectPath }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .objectPath(let path) = busValue else { throw Self.mismatch(busValue) }
        self.path = path
    }
    public var busValue: DBusValue { .objectPath(path) }
}
