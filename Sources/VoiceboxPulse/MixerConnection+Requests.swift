import CPulse
import Dispatch
import VoiceboxContract
import VoiceboxCore

/// A request on its way to the server and back, as the connection tracks it. Used only in the
/// connection's isolation (its actor, or a libpulse callback on the mainloop thread, lock held).
protocol PendingRequest: AnyObject {
    /// Stops the operation (its callback will not run) and answers the caller with `error`.
    func cancel(with error: MixerError)
}

/// One request and what its callbacks have gathered so far. The connection's `pending` holds it
/// until its last callback, a timeout or the end of the context; libpulse gets an unretained
/// pointer to it as user data, valid because any of those three also cancels the operation.
/// Used only under the mainloop lock, like the connection itself: its callbacks run on the
/// mainloop thread and enter the connection to finish.
final class Request<Value: Sendable>: PendingRequest {
    let id: UInt64
    unowned let connection: MixerConnection
    var value: Value
    var operation: OpaquePointer?
    var waiter: CheckedContinuation<Value, any Error>?

    init(id: UInt64, connection: MixerConnection, value: Value, waiter: CheckedContinuation<Value, any Error>) {
        self.id = id
        self.connection = connection
        self.value = value
        self.waiter = waiter
    }

    static func from(_ user: UnsafeMutableRawPointer?) -> Request<Value> {
        Unmanaged<Request<Value>>.fromOpaque(user!).takeUnretainedValue()
    }

    /// The operation's last callback: answers the caller with `value`, or with `error`.
    func finish(_ error: MixerError? = nil) {
        let id = id
        connection.fromCallback { $0.pending[id] = nil }
        releaseOperation()
        if let error { waiter?.resume(throwing: error) } else { waiter?.resume(returning: value) }
        waiter = nil
    }

    func cancel(with error: MixerError) {
        if let operation { pa_operation_cancel(operation) }
        releaseOperation()
        waiter?.resume(throwing: error)
        waiter = nil
    }

    private func releaseOperation() {
        if let operation { pa_operation_unref(operation) }
        operation = nil
    }
}

extension MixerConnection {
    /// Sends one request once connected and returns what its callbacks gathered.
    ///
    /// `issue` starts the operation with the given context and user data (a `Request<Value>`)
    /// and a callback that fills `value` and calls `finish`. Bounded: `connectTimeout` to be
    /// connected, then `requestTimeout` for the answer; either gives `MixerError.unavailable`.
    func request<Value: Sendable>(_ what: String, initial: Value,
                                  _ issue: (OpaquePointer, UnsafeMutableRawPointer) -> OpaquePointer?) async throws -> Value {
        try await waitUntilReady()
        return try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Value, any Error>) in
            guard phase == .ready, let context else {
                return waiter.resume(throwing: MixerError.unavailable(lastFailure))
            }
            let request = Request(id: makeID(), connection: self, value: initial, waiter: waiter)
            guard let operation = issue(context, Unmanaged.passUnretained(request).toOpaque()) else {
                return waiter.resume(throwing: MixerError.failed("\(what): \(Self.describe(pa_context_errno(context)))"))
            }
            request.operation = operation
            pending[request.id] = request
            let id = request.id
            let timeout = settings.requestTimeout
            executor.queue.asyncAfter(deadline: .now() + timeout.dispatchInterval) { [weak self] in
                self?.now { connection in
                    connection.pending.removeValue(forKey: id)?.cancel(with: .unavailable(
                        "\(what): no answer from the sound server within \(timeout)"))
                }
            }
        }
    }

    /// Sends a request answered by a success callback; `noSuchStream(index)` if the server says
    /// the stream does not exist.
    func streamCommand(_ what: String, index: UInt32,
                       _ issue: (OpaquePointer, UnsafeMutableRawPointer) -> OpaquePointer?) async throws {
        // The value is 0 on success, else the context's error code at the time of the answer.
        let code = try await request(what, initial: Int32(0), issue)
        if code == 0 { return }
        if pa_error_code_t(UInt32(bitPattern: code)) == PA_ERR_NOENTITY { throw MixerError.noSuchStream(index) }
        throw MixerError.failed("\(what) \(index): \(Self.describe(code))")
    }

    /// A `pa_context_success_cb_t` for `streamCommand`'s requests.
    nonisolated static let commandAnswered: pa_context_success_cb_t = { context, success, user in
        let request = Request<Int32>.from(user)
        request.value = success != 0 ? 0 : max(pa_context_errno(context), 1)
        request.finish()
    }
}
