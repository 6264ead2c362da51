/// An error as D-Bus carries it: a name such as `org.voicebox.Error.InvalidArgument` and a
/// message for people. Local failures (bad signatures, lost connections) use the same shape.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name): \(message)" }

    public static func invalidSignature(_ signature: String, _ why: String) -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.InvalidSignature", message: "invalid signature \"\(signature)\": \(why)")
    }

    public static func invalidArgs(_ message: String) -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: message)
    }

    public static func failed(_ message: String) -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.Failed", message: message)
    }

    public static func disconnected(_ message: String = "not connected to the bus") -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.Disconnected", message: message)
    }

    public static func noMemory() -> DBusError {
        DBusError(name: "org.freedesktop.DBus.Error.NoMemory", message: "out of memory")
    }
}

/// An error that knows its D-Bus name: errors of this kind reach the caller as they are; any
/// other error a handler throws becomes org.freedesktop.DBus.Error.Failed.
public protocol BusErrorConvertible: Error {
    var busError: DBusError { get }
}
