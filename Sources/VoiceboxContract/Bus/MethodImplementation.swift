/// A method's answer: given now, or `later` by a task of its own, so that the caller's next call
/// need not wait for it (a Speak with `wait`, a Recognize).
public enum MethodAnswer<Output: Sendable>: Sendable {
    case now(Output)
    case later(@Sendable () async throws -> Output)
}

/// One method's code, typed on the way in and out by its declaration, for the bus to run: the
/// caller's unique name and the call's arguments in, the reply's values out; what it throws is the
/// error reply. Made with `BusMethod.implementation`, as the generated `implementations(of:)` do.
public struct MethodImplementation: Sendable {
    public let method: InterfaceDescription.Method
    public let run: @Sendable (_ caller: String, _ arguments: [DBusValue]) async throws -> MethodAnswer<[DBusValue]>
}

extension BusMethod {
    /// For a method that replies: `body` gets the caller and the typed arguments.
    public func implementation(_ body: @escaping @Sendable (_ caller: String, repeat each Input) async throws -> MethodAnswer<Output>)
        -> MethodImplementation {
        let method = self
        return MethodImplementation(method: description) { caller, values in
            let arguments = try method.decode(values)
            switch try await body(caller, repeat each arguments) {
            case .now(let output): return .now(output.busValues)
            case .later(let output): return .later { try await output().busValues }
            }
        }
    }

    /// For a method that replies with nothing, once `body` has returned.
    public func implementation(_ body: @escaping @Sendable (_ caller: String, repeat each Input) async throws -> Void)
        -> MethodImplementation where Output == NoReply {
        let method = self
        return MethodImplementation(method: description) { caller, values in
            let arguments = try method.decode(values)
            try await body(caller, repeat each arguments)
            return .now([])
        }
    }
}
