import Glibc
import VoiceboxBus
import VoiceboxThreads

/// The session's IBus daemon as seen from one connection to its bus (not the session bus: see
/// IBusAddress): whether it answers, which engine the user has, switching engines. Every call is
/// bounded (`callTimeout`).
struct IBusDaemon: Sendable {
    let address: String
    let connection: BusConnection

    /// libdbus's own wait for the bus's Hello is 25 s; a daemon that does not answer within this
    /// counts as absent.
    static let connectWait: Duration = .seconds(2)
    static let callTimeout: Duration = .seconds(5)

    /// Connects to the session's IBus daemon; nil when none runs, it does not answer in time, or
    /// what answers is not ibus-daemon: fcitx5 takes IBus's place (it ends ibus-daemon, writes
    /// the address file naming the session bus, and owns org.freedesktop.IBus there) but offers
    /// only CreateInputContext, no engines of others, so it does not tell a global engine.
    static func connect(_ environment: [String: String]) async -> IBusDaemon? {
        guard let address = IBusAddress.find(environment), let daemon = await connect(address: address) else { return nil }
        do {
            _ = try await daemon.globalEngine()
            return daemon
        } catch {
            await daemon.close()
            return nil
        }
    }

    /// The connection is made on a thread of its own (libdbus blocks until the Hello is answered),
    /// so that a daemon that hangs holds up nothing past `connectWait`; one made too late is dropped.
    static func connect(address: String) async -> IBusDaemon? {
        let slot = Locked<(connection: BusConnection?, done: Bool, abandoned: Bool)>((nil, false, false))
        OwnThread.start(name: "ibus connect") {
            let connection = try? BusConnection(address: address)
            connection?.boundBusDaemonCalls(callTimeout)
            slot.withLock { state in
                state.done = true
                if !state.abandoned { state.connection = connection }
            }
        }
        let deadline = ContinuousClock.now + connectWait
        while ContinuousClock.now < deadline {
            if let result = slot.withLock({ $0.done ? $0.connection.map { Optional($0) } ?? .some(nil) : nil }) {
                return result.map { IBusDaemon(address: address, connection: $0) }
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        let late = slot.withLock { state in
            state.abandoned = true
            defer { state.connection = nil }
            return state.connection
        }
        if let late { await late.close() }
        return nil
    }

    func close() async { await connection.close() }

    private var proxy: BusProxy { IBusInterfaces.proxy(connection) }

    /// The name of the global engine (the one the focused field uses), nil when none is set.
    func globalEngine() async throws(InsertionError) -> String? {
        do {
            let reply = try await connection.call(destination: IBusInterfaces.busName, path: IBusInterfaces.path,
                                                  interface: "org.freedesktop.DBus.Properties", member: "Get",
                                                  arguments: [.string(IBusInterfaces.interfaceName), .string("GlobalEngine")],
                                                  timeout: Self.callTimeout)
            return reply.first.flatMap(IBusValues.engineName(ofDescription:))
        } catch {
            // ibus-daemon answers "No global engine." when none is set.
            if error.message.contains("No global engine") { return nil }
            throw .failed("IBus did not tell its engine: \(error.message)")
        }
    }

    /// The object path of the focused input context (the daemon's own "fake" one when no
    /// application's field has the focus), nil when it does not say.
    func focusedInputContext() async -> String? {
        let reply = try? await connection.call(destination: IBusInterfaces.busName, path: IBusInterfaces.path,
                                               interface: "org.freedesktop.DBus.Properties", member: "Get",
                                               arguments: [.string(IBusInterfaces.interfaceName), .string("CurrentInputContext")],
                                               timeout: Self.callTimeout)
        return reply?.first?.unwrapped.string
    }

    /// Switches the focused input context to `engine`. Answered once the engine is in place (the
    /// daemon has then called its FocusIn, on the engine's own connection).
    func setGlobalEngine(_ engine: String) async throws(InsertionError) {
        do {
            try await proxy.call(IBusInterfaces.setGlobalEngine, engine, timeout: Self.callTimeout)
        } catch {
            throw .failed("IBus did not switch to the engine \(engine): \(error.message)")
        }
    }

    /// Waits until `name` (another connection's unique name) has left the daemon's bus: by then the
    /// daemon has also dropped what that connection registered. False when it is still there after `timeout`.
    func waitUntilGone(_ name: String, timeout: Duration) async -> Bool {
        let gone = Locked(false)
        let token = connection.watchPeer(name) { _ in gone.withLock { $0 = true } }
        defer { connection.unwatchPeer(token) }
        return (try? await IBusWait.until(timeout, interruptible: false) { gone.withLock { $0 } }) ?? false
    }
}

/// Bounded waits on what the daemon tells us, checked every few milliseconds (the whole typing
/// takes a fraction of a second; nothing here waits while idle).
enum IBusWait {
    static let pollInterval: Duration = .milliseconds(5)

    /// True once `condition` holds, false after `timeout`. `interruptible`: a SIGINT, SIGTERM or
    /// SIGHUP noted meanwhile (InsertionGuard) ends the wait by throwing; the waits that put the
    /// user's engine back are not interruptible.
    static func until(_ timeout: Duration, interruptible: Bool = true, _ condition: () -> Bool) async throws(InsertionError) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !condition() {
            if interruptible { try InsertionGuard.checkInterrupted() }
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: pollInterval)
        }
        return true
    }
}
