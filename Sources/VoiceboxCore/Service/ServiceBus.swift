import VoiceboxContract

/// What the service needs from the bus it serves on: to announce things and to learn when a
/// caller leaves. The D-Bus face implements it; tests can record instead.
public protocol ServiceBus: Sendable {
    /// Announces one of `Speech1`'s signals with its arguments.
    func emit<each Argument>(_ signal: BusSignal<repeat each Argument>, _ arguments: repeat each Argument)
    /// Sets one of `Speech1`'s properties (announced when it changed).
    func publish<Value>(_ property: BusProperty<Value>, _ value: Value)
    /// Calls `onVanish` once when `caller` (a unique bus name) leaves the bus.
    func watchCaller(_ caller: String, onVanish: @escaping @Sendable (String) -> Void) -> UInt64
    func unwatchCaller(_ token: UInt64)
}
