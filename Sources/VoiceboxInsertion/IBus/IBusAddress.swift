import Glibc

/// Where the session's IBus daemon listens: IBus runs a D-Bus server of its own (not the session
/// bus), and names it the way `ibus address` finds it (libibus's `ibus_get_address`):
/// `$IBUS_ADDRESS`, else the file the daemon writes, `$XDG_CONFIG_HOME/ibus/bus/MACHINE-HOST-DISPLAY`
/// (`~/.config` by default; `$IBUS_ADDRESS_FILE` names another), whose `IBUS_ADDRESS=` line is used
/// only while its `IBUS_DAEMON_PID=` process is alive.
enum IBusAddress {
    /// The address, or nil where no IBus daemon runs for this session.
    static func find(_ environment: [String: String]) -> String? {
        if let address = environment["IBUS_ADDRESS"], !address.isEmpty { return address }
        guard let path = filePath(environment, machineID: machineID()),
              let contents = read(path), let entry = parse(contents) else { return nil }
        // libibus's test: kill(pid, 0) must succeed (a daemon of another user counts as gone).
        guard let pid = entry.pid, kill(pid, 0) == 0 else { return nil }
        return entry.address
    }

    /// libibus's `ibus_get_socket_path`: on Wayland the display part is WAYLAND_DISPLAY as it is
    /// ("wayland-0"); on X11 DISPLAY's host (default "unix") and display number, screen dropped.
    static func filePath(_ environment: [String: String], machineID: String) -> String? {
        if let file = environment["IBUS_ADDRESS_FILE"], !file.isEmpty { return file }
        var host = "unix", display = "0"
        if let wayland = environment["WAYLAND_DISPLAY"], !wayland.isEmpty {
            display = wayland
        } else if let x11 = environment["DISPLAY"], !x11.isEmpty {
            let parts = x11.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            if parts.count == 2 {
                if !parts[0].isEmpty { host = String(parts[0]) }
                display = String(parts[1].split(separator: ".", omittingEmptySubsequences: false).first ?? "")
            } else {
                host = x11
            }
        }
        guard let config = configDirectory(environment) else { return nil }
        return "\(config)/ibus/bus/\(machineID)-\(host)-\(display)"
    }

    /// GLib's `g_get_user_config_dir`: $XDG_CONFIG_HOME, else $HOME/.config (else the passwd entry's home).
    static func configDirectory(_ environment: [String: String]) -> String? {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") { return config }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.config" }
        guard let entry = getpwuid(getuid()), let home = entry.pointee.pw_dir else { return nil }
        return String(cString: home) + "/.config"
    }

    /// The `IBUS_ADDRESS=` and `IBUS_DAEMON_PID=` lines of an address file (comments start with #).
    static func parse(_ contents: String) -> (address: String, pid: pid_t?)? {
        var address: String?, pid: pid_t?
        for line in contents.split(whereSeparator: \.isNewline) where !line.hasPrefix("#") {
            if line.hasPrefix("IBUS_ADDRESS=") {
                address = String(line.dropFirst("IBUS_ADDRESS=".count))
            } else if line.hasPrefix("IBUS_DAEMON_PID=") {
                pid = pid_t(line.dropFirst("IBUS_DAEMON_PID=".count))
            }
        }
        guard let address, !address.isEmpty else { return nil }
        return (address, pid)
    }

    /// /var/lib/dbus/machine-id, else /etc/machine-id, else libibus's own fallback.
    static func machineID() -> String {
        for path in ["/var/lib/dbus/machine-id", "/etc/machine-id"] {
            if let text = read(path) {
                let id = text.filter { !$0.isWhitespace }
                if !id.isEmpty { return id }
            }
        }
        return "machine-id"
    }

    /// A small file's contents (the address file is a few hundred bytes).
    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65536 {
            let count = Glibc.read(fd, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
