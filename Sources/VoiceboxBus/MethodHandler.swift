import VoiceboxContract

/// The code behind one declared method, made from the declaration so that its arguments arrive
/// decoded and typed, and its reply can only have the declared shape.
public struct MethodHandler: Sendable {
    let method: InterfaceDescription.Method
    let run: @Sendable (MethodCall) async -> Void
}

extension MethodHandler {
    /// The handler of a method written against its declaration (`BusMethod.implementation`, as
    /// the generated `implementations(of:)` make them): it runs in the caller's turn, and a `later`
    /// answer comes from a task of its own.
    public init(_ implementation: MethodImplementation) {
        self.init(method: implementation.method) { call in
            do {
                switch try await implementation.run(call.sender, call.arguments) {
                case .now(let values): call.reply(values)
                case .later(let values):
                    Task {
                        do { call.reply(try await values()) } catch { call.fail(DBusError(replyingWith: error)) }
                    }
                }
            } catch {
                call.fail(DBusError(replyingWith: error))
            }
        }
    }
}

extension DBusError {
    init(replyingWith error: any Error) {
        switch error {
        case let error as DBusError: self = error
        case let error as any BusErrorConvertible: self = error.busError
        default: self = .failed("\(error)")
        }
    }
}

extension BusMethod {
    /// `body` gets the caller's unique name and the typed arguments; what it returns is the reply,
    /// what it throws the error reply.
    public func handler(_ body: @escaping @Sendable (_ sender: String, repeat each Input) async throws -> Output) -> MethodHandler {
        let method = self
        return MethodHandler(method: description) { call in
            do {
                let arguments = try method.decode(call.arguments)
                let output = try await body(call.sender, repeat each arguments)
                call.reply(output.busValues)
            } catch {
                call.fail(DBusError(replyingWith: error))
            }
        }
    }

    /// For a call answered after its turn (it waits for something): `body` answers through the
    /// responder, now or later from a task of its own, and the caller's next call runs as soon
    /// as `body` returns. An error thrown by `body` is the reply.
    public func deferredHandler(_ body: @escaping @Sendable (Responder<Output>, repeat each Input) async throws -> Void) -> MethodHandler {
        let method = self
        return MethodHandler(method: description) { call in
            let responder = Responder<Output>(call)
            do {
                let arguments = try method.decode(call.arguments)
                try await body(responder, repeat each arguments)
            } catch {
                responder.fail(error)
            }
        }
    }
}

/// Answers one call, once, from any thread; later answers are ignored. A responder dropped
/// without answering fails the call, so no caller waits for nothing.
public struct Responder<Output: BusReply>: Sendable {
    private let call: MethodCall

    init(_ call: MethodCall) { self.call = call }

    /// The caller's unique bus name.
    public var sender: String { call.sender }

    public func reply(_ output: Output) { call.reply(output.busValues) }

    public func fail(_ error: any Error) { call.fail(DBusError(replyingWith: error)) }

    /// Replies with what `body` returns, or fails with what it throws.
    public func answer(_ body: () async throws -> Output) async {
        do { reply(try await body()) } catch { fail(error) }
    }
}
