import CDBus
// libdbus declares a DBusError too (its C struct, `CDBus.DBusError` where used): ours is the contract's.
import struct VoiceboxContract.DBusError
import VoiceboxContract

/// Everything about one connection that only the loop thread touches: the libdbus pointer,
/// its watches and timeouts, exported objects, signal subscriptions and watched peers.
final class ConnectionState {
    let connection: OpaquePointer
    var watches: Set<OpaquePointer> = []
    let timeouts = TimeoutTable()
    var stopped = false
    var objects: [String: ExportedObject] = [:]
    var subscriptions: [UInt64: SignalSubscription] = [:]
    var peers = PeerTable()
    /// How long a question to the bus daemon itself may wait (`BusConnection.boundBusDaemonCalls`).
    var busDaemonTimeoutMilliseconds: Int32 = 25_000
    var onDisconnect: [@Sendable () -> Void] = []
    /// Run once the connection has been quiet for a while after traffic (`BusConnection.whenQuiet`).
    var quiet: QuietWatch?
    /// For handing work back to the loop from completions that may not capture this object.
    weak var loopHandle: EventLoop?

    init(connection: OpaquePointer) { self.connection = connection }

    /// Hooks libdbus up to this object. Called once, before the loop thread starts.
    func install() {
        let me = Unmanaged.passUnretained(self).toOpaque()
        dbus_connection_set_watch_functions(connection, { watch, data in
            ConnectionState.from(data).watches.insert(watch!)
            return 1
        }, { watch, data in
            ConnectionState.from(data).watches.remove(watch!)
        }, { _, _ in
            // Enabled state is read afresh before each poll.
        }, me, nil)
        dbus_connection_set_timeout_functions(connection, { timeout, data in
            ConnectionState.from(data).timeouts.add(timeout!)
            return 1
        }, { timeout, data in
            ConnectionState.from(data).timeouts.remove(timeout!)
        }, { timeout, data in
            ConnectionState.from(data).timeouts.reset(timeout!)
        }, me, nil)
        dbus_connection_add_filter(connection, { _, message, data in
            ConnectionState.from(data).handle(MessageRef(retaining: message!))
        }, me, nil)
    }

    static func from(_ data: UnsafeMutableRawPointer?) -> ConnectionState {
        Unmanaged<ConnectionState>.fromOpaque(data!).takeUnretainedValue()
    }

    func dispatchIncoming() {
        while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
    }

    var onStopped: [@Sendable () -> Void] = []

    func shutDown() {
        dbus_connection_flush(connection)
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
        for handler in onStopped { handler() }
    }

    /// Sends and drops our reference; a failure here means the connection is gone.
    func send(_ message: MessageRef) {
        if dbus_connection_send(connection, message.pointer, nil) == 0 {
            busLog("could not queue a message: out of memory")
        }
    }

    // MARK: Incoming

    private func handle(_ message: MessageRef) -> DBusHandlerResult {
        switch message.type {
        case VB_MESSAGE_TYPE_METHOD_CALL:
            if !watchedCall(message) { handleMethodCall(message) }
            return DBUS_HANDLER_RESULT_HANDLED
        case VB_MESSAGE_TYPE_SIGNAL:
            handleSignal(message)
        default:
            break
        }
        return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
    }

    private func handleSignal(_ message: MessageRef) {
        if message.interface == "org.freedesktop.DBus.Local" && message.member == "Disconnected" {
            busLog("disconnected from the bus")
            stopped = true
            for handler in onDisconnect { handler() }
            return
        }
        if message.interface == "org.freedesktop.DBus", message.member == "NameOwnerChanged",
           message.sender == "org.freedesktop.DBus",
           let args = try? Marshalling.read(message.pointer), args.count == 3,
           let name = args[0].string, args[2].string == "" {
            peers.vanished(name, state: self)
        }
        guard !subscriptions.isEmpty else { return }
        let signal = Signal(message)
        for subscription in subscriptions.values where subscription.matches(signal, kind: .signal) {
            subscription.handler(signal)
        }
    }

    /// Another connection's method call that a subscription watches: handed to it, and neither
    /// dispatched nor answered (the answer is its callee's).
    private func watchedCall(_ message: MessageRef) -> Bool {
        guard subscriptions.values.contains(where: { $0.filter.kind == .methodCall }) else { return false }
        let call = Signal(message)
        let watching = subscriptions.values.filter { $0.matches(call, kind: .methodCall) }
        for subscription in watching { subscription.handler(call) }
        return !watching.isEmpty
    }

    private func handleMethodCall(_ message: MessageRef) {
        let path = message.path ?? "/"
        if let object = objects[path] {
            object.handle(message, state: self)
        } else if message.interface == "org.freedesktop.DBus.Introspectable" && message.member == "Introspect" {
            // Parents of exported objects, so that `busctl tree` can walk down to them.
            let children = Introspection.children(of: path, among: objects.keys)
            if children.isEmpty {
                replyError(to: message, .init(name: "org.freedesktop.DBus.Error.UnknownObject", message: "no object at \(path)"))
            } else {
                reply(to: message, [.string(Introspection.xml(interfaces: [], children: children))])
            }
        } else {
            replyError(to: message, .init(name: "org.freedesktop.DBus.Error.UnknownObject", message: "no object at \(path)"))
        }
    }

    // MARK: Replies

    func reply(to call: MessageRef, _ values: [DBusValue]) {
        guard call.expectsReply, let reply = dbus_message_new_method_return(call.pointer) else { return }
        let message = MessageRef(adopting: reply)
        do {
            try Marshalling.append(values, to: reply)
        } catch {
            busLog("reply to \(call.member ?? "?") not sent: \(error)")
            replyError(to: call, .failed("the service produced an invalid reply: \(error.message)"))
            return
        }
        send(message)
    }

    func replyError(to call: MessageRef, _ error: DBusError) {
        guard call.expectsReply else { return }
        var name = error.name
        if (try? Names.check(errorName: name)) == nil { name = "org.freedesktop.DBus.Error.Failed" }
        var text = error.message
        text.removeAll { $0 == "\0" }
        guard let reply = dbus_message_new_error(call.pointer, name, text) else { return }
        send(MessageRef(adopting: reply))
    }

    func emit(path: String, interface: String, member: String, arguments: [DBusValue]) {
        do {
            send(try BusConnection.makeSignal(path: path, interface: interface, member: member, arguments: arguments))
        } catch {
            busLog("signal \(interface).\(member) not sent: \(error)")
        }
    }

    // MARK: Outgoing calls

    func call(_ message: MessageRef, timeoutMilliseconds: Int32,
              completion: @escaping @Sendable (Result<[DBusValue], DBusError>) -> Void) {
        var pending: OpaquePointer?
        guard dbus_connection_send_with_reply(connection, message.pointer, &pending, timeoutMilliseconds) != 0,
              let pending else {
            completion(.failure(.disconnected()))
            return
        }
        let box = Unmanaged.passRetained(CompletionBox(completion)).toOpaque()
        let installed = dbus_pending_call_set_notify(pending, { pending, data in
            let box = Unmanaged<CompletionBox>.fromOpaque(data!).takeUnretainedValue()
            guard let reply = dbus_pending_call_steal_reply(pending) else {
                box.complete(.failure(.disconnected()))
                return
            }
            let message = MessageRef(adopting: reply)
            if let error = message.asError() {
                box.complete(.failure(error))
            } else {
                box.complete(Result { () throws(DBusError) in try Marshalling.read(reply) })
            }
        }, box, { data in
            Unmanaged<CompletionBox>.fromOpaque(data!).release()
        })
        if installed == 0 {
            let unused = Unmanaged<CompletionBox>.fromOpaque(box).takeRetainedValue()
            unused.complete(.failure(.noMemory()))
        }
        // The notify function keeps what it needs; the connection holds the pending call.
        dbus_pending_call_unref(pending)
    }
}

/// The completion of one pending call. libdbus frees it with the pending call; a call that
/// never got its reply (the connection closed first) is failed then, so no caller hangs.
private final class CompletionBox {
    private var completion: (@Sendable (Result<[DBusValue], DBusError>) -> Void)?
    init(_ completion: @escaping @Sendable (Result<[DBusValue], DBusError>) -> Void) { self.completion = completion }

    func complete(_ result: Result<[DBusValue], DBusError>) {
        completion?(result)
        completion = nil
    }

    deinit { completion?(.failure(.disconnected("the connection closed before the reply came"))) }
}
