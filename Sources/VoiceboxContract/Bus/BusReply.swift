/// What a method returns: its output arguments, typed. A single `BusArgument` is a reply of
/// one argument; `NoReply` is the empty reply; a struct conforming to it gives several.
public protocol BusReply: Sendable {
    static var busTypes: [DBusType] { get }
    init(busValues: [DBusValue]) throws(DBusError)
    var busValues: [DBusValue] { get }
}

extension BusReply where Self: BusArgument {
    public static var busTypes: [DBusType] { [busType] }
    public init(busValues: [DBusValue]) throws(DBusError) {
        guard busValues.count == 1 else { throw .invalidArgs("expected one value, got \(busValues.count)") }
        try self.init(busValue: busValues[0])
    }
    public var busValues: [DBusValue] { [busValue] }
}

extension String: BusReply {}
extension Bool: BusReply {}
extension UInt32: BusReply {}
extension UInt64: BusReply {}
extension Double: BusReply {}
extension Array: BusReply where Element: BusArgument {}
extension VarDict: BusReply {}

/// The reply of a method that returns nothing.
public struct NoReply: BusReply, Equatable {
    public init() {}
    public static var busTypes: [DBusType] { [] }
    public init(busValues: [DBusValue]) throws(DBusError) {
        guard busValues.isEmpty else { throw .invalidArgs("expected no values, got \(busValues.count)") }
    }
    public var busValues: [DBusValue] { [] }
}
