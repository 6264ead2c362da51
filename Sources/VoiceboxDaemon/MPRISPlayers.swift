import VoiceboxBus
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads

/// Media players over MPRIS on the session bus: `Pause()` and `Play()` (never `PlayPause()`,
/// which would start a stopped player). playerctld is skipped: it only proxies another player,
/// which is asked directly. Every player is asked concurrently, each call bounded by `timeout`
/// (player-answer).
///
/// A player we paused is watched (its PropertiesChanged) until it is resumed: if its status is
/// ever anything but Paused meanwhile, the user played it (and maybe paused it again), and it is
/// left as the user left it.
final class MPRISPlayers: MediaPlayers {
    let connection: BusConnection
    let timeout: Duration
    /// Subscription tokens and whether the user touched it, by the player's name (one process may
    /// own several names, each watched and released on its own).
    private let watched = Locked<[String: (token: UInt64?, touched: Bool)]>([:])

    init(connection: BusConnection, timeout: Duration) {
        self.connection = connection
        self.timeout = timeout
    }

    static let prefix = "org.mpris.MediaPlayer2."
    static let path = "/org/mpris/MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"

    func playing() async -> [MediaPlayer] {
        let names = (try? await bus("ListNames"))?.first?.arrayElements?.compactMap(\.string) ?? []
        let players = names.filter { $0.hasPrefix(Self.prefix) && $0 != Self.prefix + "playerctld" }
        return await withTaskGroup(of: MediaPlayer?.self) { group in
            for name in players {
                group.addTask { [self] in
                    guard await status(of: name) == "Playing", let owner = await owner(of: name) else { return nil }
                    return MediaPlayer(name: name, owner: owner, processID: await processID(of: owner),
                                       position: await position(of: owner))
                }
            }
            var found: [MediaPlayer] = []
            for await player in group { if let player { found.append(player) } }
            return found.sorted { $0.name < $1.name }
        }
    }

    func pause(_ player: MediaPlayer) async -> Bool {
        await watch(player)
        // Sent to the unique name: the player that was found playing, not a newcomer that took the name.
        let paused = (try? await connection.call(destination: player.owner, path: Self.path, interface: Self.playerInterface,
                                                 member: "Pause", timeout: timeout)) != nil
        // Its own "Paused" announcement may still be on its way; anything else from now on is the user.
        watched.withLock { $0[player.name]?.touched = false }
        if !paused { unwatch(player.name) }
        return paused
    }

    func resumeIfStillPaused(_ player: MediaPlayer) async -> Bool {
        let touched = unwatch(player.name)
        guard !touched, await owner(of: player.name) == player.owner, await status(of: player.owner) == "Paused" else {
            return false
        }
        // Played and paused again (after a crash nobody watched it): it is somewhere else now.
        if let then = player.position, let now = await position(of: player.owner), abs(now - then) > Self.movedThreshold {
            return false
        }
        return (try? await connection.call(destination: player.owner, path: Self.path, interface: Self.playerInterface,
                                           member: "Play", timeout: timeout)) != nil
    }

    private func watch(_ player: MediaPlayer) async {
        let name = player.name
        if let stale = watched.withLock({ $0.updateValue((nil, false), forKey: name) })?.token { connection.unsubscribe(stale) }
        let filter = SignalFilter(sender: player.owner, path: Self.path, interface: "org.freedesktop.DBus.Properties",
                                  member: "PropertiesChanged")
        let token = try? await connection.subscribe(filter) { [weak self] signal in
            guard signal.arguments.first?.string == Self.playerInterface,
                  let status = signal.arguments.dropFirst().first?.vardictEntries?["PlaybackStatus"]?.string,
                  status != "Paused" else { return }
            self?.watched.withLock { $0[name]?.touched = true }
        }
        let stale: UInt64? = watched.withLock { table in
            guard table[name] != nil else { return token }  // already unwatched
            table[name]?.token = token
            return nil
        }
        if let stale { connection.unsubscribe(stale) }
    }

    /// Stops watching; returns whether the user touched the player meanwhile.
    @discardableResult
    private func unwatch(_ name: String) -> Bool {
        let entry = watched.withLock { $0.removeValue(forKey: name) }
        if let token = entry?.token { connection.unsubscribe(token) }
        return entry?.touched ?? false
    }

    private func status(of name: String) async -> String? {
        let reply = try? await connection.call(destination: name, path: Self.path, interface: "org.freedesktop.DBus.Properties",
                                               member: "Get", arguments: [.string(Self.playerInterface), .string("PlaybackStatus")],
                                               timeout: timeout)
        return reply?.first?.unwrapped.string
    }

    /// More than the moment between reading a playing player's position and its pause.
    static let movedThreshold: Int64 = 1_000_000

    private func position(of name: String) async -> Int64? {
        let reply = try? await connection.call(destination: name, path: Self.path, interface: "org.freedesktop.DBus.Properties",
                                               member: "Get", arguments: [.string(Self.playerInterface), .string("Position")],
                                               timeout: timeout)
        return reply?.first?.unwrapped.int64
    }

    private func owner(of name: String) async -> String? {
        try? await bus("GetNameOwner", [.string(name)]).first?.string
    }

    private func processID(of owner: String) async -> Int32? {
        (try? await bus("GetConnectionUnixProcessID", [.string(owner)]))?.first?.uint32.map { Int32(bitPattern: $0) }
    }

    private func bus(_ member: String, _ arguments: [DBusValue] = []) async throws(DBusError) -> [DBusValue] {
        try await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                  interface: "org.freedesktop.DBus", member: member, arguments: arguments, timeout: timeout)
    }
}
