/// What the service needs from the bus it serves on: to announce things and to learn when a
/// caller leaves. The D-Bus face implements it; tests can record instead.
public protocol ServiceBus: Sendable {
    /// Announces one of `ServiceSignals` with its arguments.
    func emit<each Argument>(_ signal: ServiceSignal<repeat each Argument>, _ arguments: repeat each Argument)
    /// Sets one of `ServiceProperties` (announced when it changed).
    func publish<Value>(_ property: ServiceProperty<Value>, _ value: Value)
    /// Calls `onVanish` once when `caller` (a unique bus name) leaves the bus.
    func watchCaller(_ caller: String, onVanish: @escaping @Sendable (String) -> Void) -> UInt64
    func unwatchCaller(_ token: UInt64)
}
