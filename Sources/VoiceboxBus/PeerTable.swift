import CDBus

/// Callers we are doing work for, so their work can be cancelled when they leave the bus.
/// One match rule per watched name (arg0), as sd-bus's tracking does, not one for every
/// name change on the bus.
struct PeerTable {
    private var watchers: [String: [UInt64: @Sendable (String) -> Void]] = [:]
    private var ownerOfToken: [UInt64: String] = [:]

    static func rule(for name: String) -> String {
        "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(name)'"
    }

    mutating func watch(_ name: String, token: UInt64, state: ConnectionState, onVanish: @escaping @Sendable (String) -> Void) {
        if watchers[name] == nil {
            // Without an error argument libdbus does not block; the rule is in place before
            // the NameHasOwner call below is answered, which closes the race of a caller
            // that left before we started watching.
            dbus_bus_add_match(state.connection, Self.rule(for: name), nil)
            checkStillThere(name, state: state)
        }
        watchers[name, default: [:]][token] = onVanish
        ownerOfToken[token] = name
    }

    mutating func unwatch(token: UInt64, state: ConnectionState) {
        guard let name = ownerOfToken.removeValue(forKey: token) else { return }
        watchers[name]?[token] = nil
        if watchers[name]?.isEmpty == true {
            watchers[name] = nil
            dbus_bus_remove_match(state.connection, Self.rule(for: name), nil)
        }
    }

    mutating func vanished(_ name: String, state: ConnectionState) {
        guard let handlers = watchers.removeValue(forKey: name) else { return }
        for token in handlers.keys { ownerOfToken[token] = nil }
        dbus_bus_remove_match(state.connection, Self.rule(for: name), nil)
        for handler in handlers.values { handler(name) }
    }

    private func checkStillThere(_ name: String, state: ConnectionState) {
        guard let call = try? BusConnection.makeCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                     interface: "org.freedesktop.DBus", member: "NameHasOwner",
                                                     arguments: [.string(name)]) else { return }
        let loop = state.loopHandle
        state.call(call, timeoutMilliseconds: state.busDaemonTimeoutMilliseconds) { result in
            if case .success(let values) = result, values.first?.bool == false {
                loop?.submit { state in state.peers.vanished(name, state: state) }
            }
        }
    }
}
