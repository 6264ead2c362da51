/// What the service needs from the bus it serves on: to announce things and to learn when a
/// caller leaves. The D-Bus face implements it; tests can record instead.
public protocol ServiceBus: Sendable {
    func emit(_ signal: ServiceSignal)
    func publish(_ property: ServiceProperty)
    /// Calls `onVanish` once when `caller` (a unique bus name) leaves the bus.
    func watchCaller(_ caller: String, onVanish: @escaping @Sendable (String) -> Void) -> UInt64
    func unwatchCaller(_ token: UInt64)
}

public enum ServiceSignal: Sendable, Equatable {
    case speechStarted(UInt64)
    case speechMark(UInt64, String)
    case speechFinished(UInt64, SynthesisEnd)
    case voicesChanged
}

public enum ServiceProperty: Sendable, Equatable {
    case version(String)
    case speaking(Bool)
    case voiceCount(UInt32)
}
