import CDBus
// libdbus declares a DBusError too (its C struct, `CDBus.DBusError` where used): ours is the contract's.
import struct VoiceboxContract.DBusError
import Glibc
import Synchronization
import VoiceboxContract
import VoiceboxThreads

/// A connection to a message bus, served by its own event-loop thread. Every method may be
/// called from any thread or task; work is handed to the loop in order, so signals and
/// replies leave in the order they were made.
public final class BusConnection: Sendable {
    let loop: EventLoop
    /// Our unique name on the bus, e.g. ":1.42".
    public let uniqueName: String
    private let nextToken = Atomic<UInt64>(1)
    /// How long a question to the bus daemon may wait (`boundBusDaemonCalls`), in milliseconds.
    private let busDaemonMilliseconds = Atomic<Int32>(25_000)
    private var busDaemonTimeout: Duration { .milliseconds(Int(busDaemonMilliseconds.load(ordering: .relaxed))) }

    /// A timeout as libdbus takes it: whole milliseconds, at most Int32's.
    private static func milliseconds(_ timeout: Duration) -> Int32 {
        Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
    }

    /// The user's session bus ($DBUS_SESSION_BUS_ADDRESS).
    public static func session() throws(DBusError) -> BusConnection {
        try BusConnection { error in dbus_bus_get_private(DBUS_BUS_SESSION, &error) }
    }

    /// A bus at an explicit address (tests, private buses).
    public convenience init(address: String) throws(DBusError) {
        try self.init { error in
            guard let connection = dbus_connection_open_private(address, &error) else { return nil }
            guard dbus_bus_register(connection, &error) != 0 else {
                dbus_connection_close(connection)
                dbus_connection_unref(connection)
                return nil
            }
            return connection
        }
    }

    private init(opening open: (inout CDBus.DBusError) -> OpaquePointer?) throws(DBusError) {
        // Before any other libdbus call: makes reference counts and the connection lock thread-safe.
        dbus_threads_init_default()
        var error = vb_error_new()
        guard let connection = open(&error) else {
            let failure = DBusError(name: error.name.map { String(cString: $0) } ?? "org.freedesktop.DBus.Error.Failed",
                                    message: error.message.map { String(cString: $0) } ?? "cannot connect to the bus")
            dbus_error_free(&error)
            throw failure
        }
        // By default libdbus calls _exit() when the bus goes away; we decide for ourselves.
        dbus_connection_set_exit_on_disconnect(connection, 0)
        uniqueName = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
        let state = ConnectionState(connection: connection)
        state.install()
        loop = EventLoop()
        state.loopHandle = loop
        loop.start(name: "dbus " + uniqueName, state: state)
    }

    deinit { loop.submit { $0.stopped = true } }

    /// How long the questions this connection asks the bus daemon (taking and releasing a name,
    /// adding a match rule for `subscribe`, whether a watched caller is still there) may wait for
    /// its answer; 25 s, libdbus's default, until set.
    public func boundBusDaemonCalls(_ timeout: Duration) {
        let milliseconds = Self.milliseconds(timeout)
        busDaemonMilliseconds.store(milliseconds, ordering: .relaxed)
        loop.submit { $0.busDaemonTimeoutMilliseconds = milliseconds }
    }

    /// Closes the connection after sending what is queued; returns once it is closed.
    public func close() async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.submit({ state in
                state.onStopped.append { done.resume() }
                state.stopped = true
            }, orElse: { done.resume() })
        }
    }

    /// Runs `action` on the loop thread (keep it short) each time the connection falls quiet: `delay`
    /// after the last message or job, once per spell of traffic. No traffic, no wake-ups.
    public func whenQuiet(after delay: Duration, _ action: @escaping @Sendable () -> Void) {
        loop.submit { $0.quiet = QuietWatch(delay: delay, action: action) }
    }

    /// Runs `handler` (once) when the bus connection is lost.
    public func onDisconnect(_ handler: @escaping @Sendable () -> Void) {
        loop.submit { $0.onDisconnect.append(handler) }
    }

    // MARK: Calls

    public func call(destination: String, path: String, interface: String, member: String,
                     arguments: [DBusValue] = [], timeout: Duration = .seconds(25)) async throws(DBusError) -> [DBusValue] {
        let message = try Self.makeCall(destination: destination, path: path, interface: interface, member: member, arguments: arguments)
        let milliseconds = Self.milliseconds(timeout)
        // The reply is made on the loop thread: handed over under a lock that ThreadSanitizer sees.
        let result = await withHandOver { (done: HandOver<Result<[DBusValue], DBusError>>) in
            loop.submit({ state in
                state.call(message, timeoutMilliseconds: milliseconds) { done.resume(returning: $0) }
            }, orElse: { done.resume(returning: .failure(.disconnected())) })
        }
        return try result.get()
    }

    static func makeCall(destination: String, path: String, interface: String, member: String,
                         arguments: [DBusValue]) throws(DBusError) -> MessageRef {
        try Names.check(busName: destination)
        try Names.check(path: path)
        try Names.check(interface: interface)
        try Names.check(member: member)
        guard let pointer = dbus_message_new_method_call(destination, path, interface, member) else { throw .noMemory() }
        let message = MessageRef(adopting: pointer)
        try Marshalling.append(arguments, to: pointer)
        return message
    }

    static func makeSignal(path: String, interface: String, member: String, arguments: [DBusValue]) throws(DBusError) -> MessageRef {
        try Names.check(path: path)
        try Names.check(interface: interface)
        try Names.check(member: member)
        guard let pointer = dbus_message_new_signal(path, interface, member) else { throw .noMemory() }
        let message = MessageRef(adopting: pointer)
        try Marshalling.append(arguments, to: pointer)
        return message
    }

    // MARK: Names

    public enum NameRequestResult: Sendable { case primaryOwner, alreadyOwner, taken }

    /// Asks for a well-known name without queueing for it (`boundBusDaemonCalls` bounds the wait).
    /// `replacing`: taken from an owner that allows it (which then waits in the bus's queue, and
    /// has it back when we release it or leave).
    public func requestName(_ name: String, replacing: Bool = false) async throws(DBusError) -> NameRequestResult {
        let flags = VB_NAME_FLAG_DO_NOT_QUEUE | (replacing ? VB_NAME_FLAG_REPLACE_EXISTING : 0)
        let reply = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                   interface: "org.freedesktop.DBus", member: "RequestName",
                                   arguments: [.string(name), .uint32(flags)], timeout: busDaemonTimeout)
        switch reply.first?.uint32.map(Int32.init) {
        case VB_REQUEST_NAME_REPLY_PRIMARY_OWNER: return .primaryOwner
        case VB_REQUEST_NAME_REPLY_ALREADY_OWNER: return .alreadyOwner
        default: return .taken
        }
    }

    public func releaseName(_ name: String) async throws(DBusError) {
        _ = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                           interface: "org.freedesktop.DBus", member: "ReleaseName", arguments: [.string(name)],
                           timeout: busDaemonTimeout)
    }

    // MARK: Objects and signals

    /// Exports an object with one interface; `handlers` must cover each of its methods exactly.
    public func export(path: String, interface: InterfaceDescription, handlers: [MethodHandler]) throws(DBusError) -> ExportedObject {
        try Names.check(path: path)
        try Names.check(interface: interface.name)
        for method in interface.methods {
            try Names.check(member: method.name)
            _ = try DBusType.parseList(method.inputSignature)
        }
        let object = try ExportedObject(path: path, interface: interface, handlers: handlers, loop: loop)
        loop.submit { $0.objects[path] = object }
        return object
    }

    public func emit(path: String, interface: String, member: String, arguments: [DBusValue] = []) {
        loop.submit { $0.emit(path: path, interface: interface, member: member, arguments: arguments) }
    }

    /// Delivers matching signals to `handler` (on the loop thread: hand off at once).
    /// Returns once the bus has the match rule, so no signal sent afterwards is missed.
    public func subscribe(_ filter: SignalFilter, handler: @escaping @Sendable (Signal) -> Void) async throws(DBusError) -> UInt64 {
        let token = nextToken.add(1, ordering: .relaxed).oldValue
        loop.submit { $0.subscriptions[token] = SignalSubscription(filter: filter, handler: handler) }
        do {
            _ = try await call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                               interface: "org.freedesktop.DBus", member: "AddMatch", arguments: [.string(filter.matchRule)],
                               timeout: busDaemonTimeout)
        } catch {
            loop.submit { $0.subscriptions[token] = nil }
            throw error
        }
        return token
    }

    public func unsubscribe(_ token: UInt64) {
        loop.submit { state in
            guard let subscription = state.subscriptions.removeValue(forKey: token) else { return }
            dbus_bus_remove_match(state.connection, subscription.filter.matchRule, nil)
        }
    }

    /// Calls `onVanish` once if `name` (a caller's unique name) leaves the bus.
    public func watchPeer(_ name: String, onVanish: @escaping @Sendable (String) -> Void) -> UInt64 {
        let token = nextToken.add(1, ordering: .relaxed).oldValue
        loop.submit { state in state.peers.watch(name, token: token, state: state, onVanish: onVanish) }
        return token
    }

    public func unwatchPeer(_ token: UInt64) {
        loop.submit { state in state.peers.unwatch(token: token, state: state) }
    }
}
