import Foundation
import Glibc
import VoiceboxBus
import VoiceboxContract
import XCTest

/// A real GNOME session, headless: gnome-shell 43 as a Wayland compositor with a virtual monitor,
/// under a session bus and an empty system bus of its own, in a runtime directory and home of its
/// own. gnome-shell starts its own ibus-daemon, as on a desktop. What it needs headless (measured,
/// ../shared/notes/desktop-reach.md): a system bus to connect to, a keyboard (headless mutter has
/// none, so no window would get the focus: a Mutter RemoteDesktop session pressing Shift once
/// makes a virtual one, and it types dead keys and Hangul later), and the overview closed (it starts
/// open, with its search entry focused). One GTK 3 window with a focused entry (EntryWindow).
final class GnomeSession: Sendable {
    let root: String
    let runtime: String
    let home: String
    static let waylandDisplay = "voicebox-gnome"
    /// The window with the entry (replaced by `reopenWindow`).
    var window: EntryWindow { windowSlot.value }
    private let windowSlot: Shared<EntryWindow>
    private let systemBus: Subprocess
    private let sessionBus: Subprocess
    private let shell: Subprocess
    /// The test's own connection to the session bus: the RemoteDesktop session lives as long as it.
    private let bus: BusConnection
    private let keyboardSession: String
    /// What a GTK window started in the session gets (Wayland, no accessibility bus).
    let windowEnvironment: [String: String]

    static func require() throws {
        for program in ["/usr/bin/gnome-shell", "/usr/bin/ibus-daemon", "/usr/bin/dbus-daemon", "/usr/bin/dbus-send"] {
            try XCTSkipUnless(access(program, X_OK) == 0, "\(program) is not installed (scripts/deps installs it)")
        }
        try EntryWindow.require()
    }

    /// What a program started in this session has: the session's variables and nothing of the
    /// test's (no IBUS_ADDRESS, no DISPLAY, the session's own bus and home).
    var environment: [String: String] {
        var environment = [
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "XDG_RUNTIME_DIR": runtime, "LANG": "C.UTF-8",
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=\(runtime)/bus", "WAYLAND_DISPLAY": Self.waylandDisplay,
            "XDG_SESSION_TYPE": "wayland", "XDG_CURRENT_DESKTOP": "GNOME", "VOICEBOX_GNOME_SESSION": root,
        ]
        // scripts/test stops whatever of its run is left behind by this marker.
        environment["VOICEBOX_TEST_RUN"] = ProcessInfo.processInfo.environment["VOICEBOX_TEST_RUN"]
        return environment
    }

    var busAddress: String { "unix:path=\(runtime)/bus" }

    /// The test stack with this session's bus as the bus (for a voiceboxd that `dictate` in the
    /// session reaches).
    func onSessionBus(_ stack: Stack) -> Stack {
        Stack(busAddress: busAddress, speechdAddress: stack.speechdAddress, sink: stack.sink, micSink: stack.micSink,
              speechdConfig: stack.speechdConfig, binDirectory: stack.binDirectory)
    }

    /// One for a test class, started by its first test (a session takes seconds to start).
    static func classFixture() -> ClassFixture<GnomeSession> {
        ClassFixture("gnome", start: { directory in
            try require()
            return try await GnomeSession(in: directory)
        }, stop: { await $0.stop() })
    }

    /// The state each test starts from, and leaves: the entry window running, focused and empty,
    /// IBus's engine xkb:us::eng.
    func prepareForTest() async throws {
        if !window.isRunning || !window.hasFocus { try await reopenWindow() }
        try await window.clear()
        if try ibusEngine() != "xkb:us::eng" { try run(["ibus", "engine", "xkb:us::eng"]) }
    }

    init(in directory: URL) async throws {
        root = directory.path
        runtime = root + "/runtime"
        home = root + "/home"
        for path in [runtime, home] { try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
        chmod(runtime, 0o700)
        var environment = [
            "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": root + "/home", "XDG_RUNTIME_DIR": root + "/runtime", "LANG": "C.UTF-8",
            "VOICEBOX_GNOME_SESSION": root,
        ]
        environment["VOICEBOX_TEST_RUN"] = ProcessInfo.processInfo.environment["VOICEBOX_TEST_RUN"]
        let quiet = XSession.devNullForTests
        systemBus = try Subprocess("/usr/bin/dbus-daemon", ["--session", "--nofork", "--address=unix:path=\(root)/system_bus"],
                                   environment: environment, stdoutFD: quiet, stderrFD: quiet)
        sessionBus = try Subprocess("/usr/bin/dbus-daemon", ["--session", "--nofork", "--address=unix:path=\(root)/runtime/bus"],
                                    environment: environment, stdoutFD: quiet, stderrFD: quiet)
        let root = root
        // Its socket is there before it listens: connected to, not only seen.
        try await waitUntil("the session's buses", timeout: .seconds(15)) {
            ["/system_bus", "/runtime/bus"].allSatisfy { (try? BusConnection(address: "unix:path=\(root)\($0)")) != nil }
        }
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=\(root)/system_bus"
        environment["DBUS_SESSION_BUS_ADDRESS"] = "unix:path=\(root)/runtime/bus"
        environment["XDG_SESSION_TYPE"] = "wayland"
        environment["XDG_CURRENT_DESKTOP"] = "GNOME"
        // Its messages go to a file in the session's directory (kept when a test fails there).
        let log = open(root + "/gnome-shell.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer { close(log) }
        shell = try Subprocess("/usr/bin/gnome-shell", ["--headless", "--wayland", "--no-x11", "--virtual-monitor", "1024x768",
                                                         "--wayland-display", Self.waylandDisplay],
                               environment: environment, stdoutFD: log, stderrFD: log)
        let connection = try BusConnection(address: "unix:path=\(root)/runtime/bus")
        bus = connection
        try await Self.waitForShell(connection)
        try await Self.closeOverview(connection)
        keyboardSession = try await Self.startKeyboard(connection)
        windowEnvironment = environment.merging(["WAYLAND_DISPLAY": Self.waylandDisplay, "GDK_BACKEND": "wayland", "NO_AT_BRIDGE": "1"]) { $1 }
        windowSlot = Shared(try EntryWindow(in: root + "/window", environment: windowEnvironment))
        try await windowSlot.value.waitForFocus()
        try await waitUntil("gnome-shell's ibus-daemon", timeout: .seconds(30)) {
            (try? FileManager.default.contentsOfDirectory(atPath: root + "/home/.config/ibus/bus"))?.isEmpty == false
        }
    }

    private static func call(_ bus: BusConnection, _ destination: String, _ path: String, _ interface: String, _ member: String,
                             _ arguments: [DBusValue] = []) async throws -> [DBusValue] {
        try await bus.call(destination: destination, path: path, interface: interface, member: member, arguments: arguments,
                           timeout: .seconds(20))
    }

    private static func waitForShell(_ bus: BusConnection) async throws {
        try await waitUntil("gnome-shell on the session bus", timeout: .seconds(60)) {
            let owners = try? await call(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "ListNames")
            let names = owners?.first?.arrayElements?.compactMap(\.string) ?? []
            return names.contains("org.gnome.Shell") && names.contains("org.gnome.Mutter.RemoteDesktop")
        }
    }

    /// A Mutter RemoteDesktop session (it lives as long as our connection), Shift pressed once.
    private static func startKeyboard(_ bus: BusConnection) async throws -> String {
        let reply = try await call(bus, "org.gnome.Mutter.RemoteDesktop", "/org/gnome/Mutter/RemoteDesktop",
                                   "org.gnome.Mutter.RemoteDesktop", "CreateSession")
        guard let session = reply.first?.string else { throw ProgramError(description: "RemoteDesktop gave no session") }
        _ = try await call(bus, "org.gnome.Mutter.RemoteDesktop", session, "org.gnome.Mutter.RemoteDesktop.Session", "Start")
        try await press(bus, session, [0xFFE1])  // Shift_L
        return session
    }

    private static func press(_ bus: BusConnection, _ session: String, _ keysyms: [UInt32]) async throws {
        for keysym in keysyms {
            for down in [true, false] {
                _ = try await call(bus, "org.gnome.Mutter.RemoteDesktop", session, "org.gnome.Mutter.RemoteDesktop.Session",
                                   "NotifyKeyboardKeysym", [.uint32(keysym), .boolean(down)])
            }
        }
    }

    /// Opens or closes the overview (its search entry takes the keyboard focus while it is open).
    func setOverview(_ active: Bool) async throws {
        _ = try await Self.call(bus, "org.gnome.Shell", "/org/gnome/Shell", "org.freedesktop.DBus.Properties", "Set",
                                [.string("org.gnome.Shell"), .string("OverviewActive"), .variant(.boolean(active))])
    }

    /// Presses and releases each key (X keysyms: 0xFE51 dead_acute, 0xFF31 Hangul, 0x67 g).
    func press(_ keysyms: [UInt32]) async throws {
        try await Self.press(bus, keyboardSession, keysyms)
    }

    /// Holds `modifier` (0xFFE3 Control_L) while pressing `key`.
    func press(_ key: UInt32, holding modifier: UInt32) async throws {
        for (keysym, down) in [(modifier, true), (key, true), (key, false), (modifier, false)] {
            _ = try await Self.call(bus, "org.gnome.Mutter.RemoteDesktop", keyboardSession, "org.gnome.Mutter.RemoteDesktop.Session",
                                    "NotifyKeyboardKeysym", [.uint32(keysym), .boolean(down)])
        }
    }

    /// gnome-shell opens the overview once it has started: waited for (so it is not opened again
    /// after we closed it), then closed. Each wait 60 s: a headless gnome-shell started beside two
    /// other test lanes on two cores once took more than 30 s to close it.
    private static func closeOverview(_ bus: BusConnection) async throws {
        let shell: [DBusValue] = [.string("org.gnome.Shell"), .string("OverviewActive")]
        try? await waitUntil("the overview to open at start-up", timeout: .seconds(60)) {
            let active = try? await call(bus, "org.gnome.Shell", "/org/gnome/Shell", "org.freedesktop.DBus.Properties", "Get", shell)
            return active?.first?.unwrapped.bool == true
        }
        try await waitUntil("the overview to close", timeout: .seconds(60)) {
            _ = try? await call(bus, "org.gnome.Shell", "/org/gnome/Shell", "org.freedesktop.DBus.Properties", "Set",
                                shell + [.variant(.boolean(false))])
            let active = try? await call(bus, "org.gnome.Shell", "/org/gnome/Shell", "org.freedesktop.DBus.Properties", "Get", shell)
            return active?.first?.unwrapped.bool == false
        }
    }

    /// Runs a program in the session (gsettings, ibus), bounded.
    @discardableResult
    func run(_ arguments: [String], seconds: Int = 30) throws -> (status: Int32, output: String) {
        try runProgram(["/usr/bin/env", "-i"] + environment.map { "\($0.key)=\($0.value)" } + arguments, seconds: seconds)
    }

    /// The IBus engine the session has now (`ibus engine`), nil when none is set.
    func ibusEngine() throws -> String? {
        let (status, output) = try run(["ibus", "engine"])
        let name = output.trimmingCharacters(in: .whitespacesAndNewlines)
        return status == 0 && !name.isEmpty ? name : nil
    }

    /// Closes the window (nothing has the focus then) and, unless `reopen` is false, opens a new one
    /// and waits until its entry has the focus.
    func closeWindow(reopen: Bool) async throws {
        await window.stop()
        guard reopen else { return }
        try await reopenWindow()
    }

    /// A new window in the old one's place (`textView`: a multi-line one; `prepareForTest` does not
    /// undo that: a test that asks for one opens the entry again at its end).
    func reopenWindow(textView: Bool = false, maxLength: Int? = nil) async throws {
        if window.isRunning { await window.stop() }
        let fresh = try EntryWindow(in: root + "/window-\(UUID().uuidString)", environment: windowEnvironment, textView: textView,
                                    maxLength: maxLength)
        windowSlot.withLock { $0 = fresh }
        try await fresh.waitForFocus()
    }

    /// Everything the session started (gnome-shell's ibus-daemon and its engines, services the bus
    /// started), found by the marker in their environment, then the session itself.
    func stop() async {
        await window.stop()
        await bus.close()
        for process in [shell, sessionBus, systemBus] { process.signal(SIGTERM) }
        for process in [shell, sessionBus, systemBus] where await process.wait(timeout: .seconds(10)) == nil { process.signal(SIGKILL) }
        for signal in [SIGTERM, SIGKILL] {
            for pid in Self.processes(withEnvironmentEntry: "VOICEBOX_GNOME_SESSION=\(root)") { kill(pid, signal) }
            try? await Task.sleep(for: .milliseconds(300))
        }
    }

    /// The processes (of any parent) whose environment holds `entry`, this one aside.
    static func processes(withEnvironmentEntry entry: String) -> [pid_t] {
        let marker = Array(entry.utf8)
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard pid != getpid(), let environ = FileManager.default.contents(atPath: "/proc/\(pid)/environ") else { return false }
            return environ.split(separator: 0).contains { Array($0) == marker }
        }
    }
}
