/// An error a caller can get: one of the contract's names, and a message for people.
public struct VoiceboxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The contract's error names, generated from the list in dbus/org.voicebox.Speech1.xml.
    public typealias Kind = Speech1.ErrorName

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var dbusName: String { kind.dbusName }
    public var description: String { "\(dbusName): \(message)" }

    public static func invalidArgument(_ message: String) -> VoiceboxError { .init(.invalidArgument, message) }
    public static func engineUnavailable(_ message: String) -> VoiceboxError { .init(.engineUnavailable, message) }
}

extension VoiceboxError: BusErrorConvertible {
    public var busError: DBusError { DBusError(name: dbusName, message: message) }
}
