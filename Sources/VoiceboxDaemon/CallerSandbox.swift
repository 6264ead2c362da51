import Glibc
import VoiceboxCore
import VoiceboxBus

/// Whether a caller runs inside an app sandbox. The session bus is one user's, but a Flatpak or
/// Snap app that may talk to the service must not get, through it, files its sandbox keeps from it.
public struct CallerSandbox: Sendable {
    let connection: BusConnection
    /// How long the bus daemon may take to say which process called (the bound bus-call).
    let answer: Duration

    /// "a Flatpak sandbox" / "a Snap sandbox", or nil (outside any, or unknown: the bus would not
    /// say which process called).
    func sandbox(of sender: String) async -> String? {
        guard let process = await process(of: sender) else { return nil }
        return Self.sandbox(ofProcess: process.pid)
    }

    /// The caller's process, from the bus daemon (bounded by `answer`); nil if it would not say.
    func process(of sender: String) async -> CallerProcess? {
        let reply = try? await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                               interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID",
                                               arguments: [.string(sender)], timeout: answer)
        guard let pid = reply?.first?.uint32.map({ Int32(bitPattern: $0) }) else { return nil }
        let command = FileSystem.text(atPath: "/proc/\(pid)/comm")
        return CallerProcess(pid: pid, command: command?.trimmingWhitespace)
    }

    /// Flatpak puts /.flatpak-info in every sandbox's root (xdg-desktop-portal checks the same);
    /// snapd runs each app in a cgroup named snap.<app>.
    public static func sandbox(ofProcess pid: Int32, proc: String = "/proc") -> String? {
        if FileSystem.exists("\(proc)/\(pid)/root/.flatpak-info") { return "a Flatpak sandbox" }
        if let cgroups = FileSystem.text(atPath: "\(proc)/\(pid)/cgroup"),
           cgroups.split(separator: "\n").contains(where: { $0.contains("/snap.") }) {
            return "a Snap sandbox"
        }
        return nil
    }
}
