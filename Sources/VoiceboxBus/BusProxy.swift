import VoiceboxContract

/// One remote object seen through its declarations: typed calls, property reads and signal
/// subscriptions, so a client names no member in a string.
public struct BusProxy: Sendable {
    public let connection: BusConnection
    public let destination: String
    public let path: String
    public let interface: String

    public init(connection: BusConnection, destination: String, path: String, interface: String) {
        self.connection = connection
        self.destination = destination
        self.path = path
        self.interface = interface
    }

    @discardableResult
    public func call<each Input, Output>(_ method: BusMethod<repeat each Input, Output>, _ inputs: repeat each Input,
                                         timeout: Duration = .seconds(25)) async throws(DBusError) -> Output {
        let values = try await connection.call(destination: destination, path: path, interface: interface,
                                               member: method.name, arguments: method.encode(repeat each inputs),
                                               timeout: timeout)
        return try Output(busValues: values)
    }

    public func get<Value>(_ property: BusProperty<Value>, timeout: Duration = .seconds(25)) async throws(DBusError) -> Value {
        let reply = try await connection.call(destination: destination, path: path, interface: "org.freedesktop.DBus.Properties",
                                              member: "Get", arguments: [.string(interface), .string(property.name)],
                                              timeout: timeout)
        guard let value = reply.first, case .variant(let inner) = value else {
            throw .invalidArgs("Properties.Get gave no variant for \(property.name)")
        }
        return try Value(busValue: inner)
    }

    /// Delivers each of the object's `signal` with typed arguments (on the bus thread: hand off at
    /// once). Returns once the bus routes them to us; the token ends it with `connection.unsubscribe`.
    public func subscribe<each Argument>(_ signal: BusSignal<repeat each Argument>,
                                         _ handler: @escaping @Sendable (repeat each Argument) -> Void) async throws(DBusError) -> UInt64 {
        let filter = SignalFilter(sender: destination, path: path, interface: interface, member: signal.name)
        return try await connection.subscribe(filter) { received in
            if let arguments = signal.decode(received) { handler(repeat each arguments) }
        }
    }
}

extension BusInterface {
    /// The interface's object as seen from a client on `connection`.
    public static func proxy(_ connection: BusConnection, destination: String = busName) -> BusProxy {
        BusProxy(connection: connection, destination: destination, path: objectPath, interface: interfaceName)
    }
}
