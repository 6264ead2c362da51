import VoiceboxBus
import VoiceboxCore

/// Media players over MPRIS on the session bus: `Pause()` and `Play()` (never `PlayPause()`,
/// which would start a stopped player). playerctld is skipped: it only proxies another player,
/// which is asked directly. Every player is asked concurrently, each call bounded by `timeout`.
struct MPRISPlayers: MediaPlayers {
    let connection: BusConnection
    var timeout: Duration = .milliseconds(500)

    static let prefix = "org.mpris.MediaPlayer2."
    static let path = "/org/mpris/MediaPlayer2"
    static let playerInterface = "org.mpris.MediaPlayer2.Player"

    func playing() async -> [MediaPlayer] {
        let names = (try? await bus("ListNames"))?.first?.arrayElements?.compactMap(\.string) ?? []
        let players = names.filter { $0.hasPrefix(Self.prefix) && $0 != Self.prefix + "playerctld" }
        return await withTaskGroup(of: MediaPlayer?.self) { group in
            for name in players {
                group.addTask {
                    guard await status(of: name) == "Playing", let owner = await owner(of: name) else { return nil }
                    return MediaPlayer(name: name, owner: owner, processID: await processID(of: owner))
                }
            }
            var found: [MediaPlayer] = []
            for await player in group { if let player { found.append(player) } }
            return found.sorted { $0.name < $1.name }
        }
    }

    func pause(_ player: MediaPlayer) async -> Bool {
        // Sent to the unique name: the player that was found playing, not a newcomer that took the name.
        (try? await connection.call(destination: player.owner, path: Self.path, interface: Self.playerInterface,
                                    member: "Pause", timeout: timeout)) != nil
    }

    func resumeIfStillPaused(_ player: MediaPlayer) async -> Bool {
        guard await owner(of: player.name) == player.owner, await status(of: player.owner) == "Paused" else { return false }
        return (try? await connection.call(destination: player.owner, path: Self.path, interface: Self.playerInterface,
                                           member: "Play", timeout: timeout)) != nil
    }

    private func status(of name: String) async -> String? {
        let reply = try? await connection.call(destination: name, path: Self.path, interface: "org.freedesktop.DBus.Properties",
                                               member: "Get", arguments: [.string(Self.playerInterface), .string("PlaybackStatus")],
                                               timeout: timeout)
        return reply?.first?.unwrapped.string
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
