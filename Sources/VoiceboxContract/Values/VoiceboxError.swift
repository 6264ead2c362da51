/// The errors a caller can get, each with its D-Bus name under org.voicebox.Error.
public struct VoiceboxError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        case invalidArgument = "InvalidArgument"
        case unknownVoice = "UnknownVoice"
        case unsupportedLanguage = "UnsupportedLanguage"
        case tooLarge = "TooLarge"
        case engineUnavailable = "EngineUnavailable"
        case busy = "Busy"
        case cancelled = "Cancelled"
        case noMicrophone = "NoMicrophone"
        /// An audio file that cannot be recognized: missing, unreadable, not a regular file, not audio.
        case unreadableFile = "UnreadableFile"
        /// A sandboxed caller named a file instead of passing it (Recognize's `fd`).
        case accessDenied = "AccessDenied"
        case failed = "Failed"
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// e.g. "org.voicebox.Error.InvalidArgument".
    public var dbusName: String { "org.voicebox.Error." + kind.rawValue }
    public var description: String { "\(dbusName): \(message)" }

    public static func invalidArgument(_ message: String) -> VoiceboxError { .init(.invalidArgument, message) }
    public static func engineUnavailable(_ message: String) -> VoiceboxError { .init(.engineUnavailable, message) }
}

extension VoiceboxError: BusErrorConvertible {
    public var busError: DBusError { DBusError(name: dbusName, message: message) }
}
