import Foundation
import Glibc
import XCTest

/// An X11 session whose input method is IBus: Xvfb, an ibus-daemon of its own (in a home of its
/// own, where it writes its address), and a GTK 3 entry with GTK_IM_MODULE=ibus, focused with
/// xdotool (there is no window manager). One for the whole class.
final class IBusX11Session: Sendable {
    let display: String
    let home: String
    let window: EntryWindow
    private let server: Subprocess
    private let daemon: Subprocess

    static func require() throws {
        try XSession.require()
        try XCTSkipUnless(access("/usr/bin/ibus-daemon", X_OK) == 0, "ibus is not installed (scripts/deps installs it)")
        try XCTSkipUnless(FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/gtk-3.0/3.0.0/immodules/im-ibus.so"),
                          "ibus-gtk3 is not installed (scripts/deps installs it)")
        try EntryWindow.require()
    }

    init(in directory: URL) async throws {
        var number = 150 + Int(getpid() % 300)
        while FileManager.default.fileExists(atPath: "/tmp/.X\(number)-lock") || FileManager.default.fileExists(atPath: "/tmp/.X11-unix/X\(number)") {
            number += 1
        }
        display = ":\(number)"
        home = directory.appendingPathComponent("home").path
        try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        let quiet = XSession.devNullForTests
        server = try Subprocess(XSession.programPath("Xvfb")!, [display, "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                                stdoutFD: quiet, stderrFD: quiet)
        let display = display
        try await waitUntil("Xvfb \(display) to answer", timeout: .seconds(15)) {
            (try? runProgram(["xdpyinfo", "-display", display], seconds: 10).status) == 0
        }
        // Not daemonized: it ends when its parent (this process) does.
        daemon = try Subprocess("/usr/bin/ibus-daemon", ["--panel", "disable"], environment: Self.environment(display, home: home),
                                stdoutFD: quiet, stderrFD: quiet)
        let home = home
        try await waitUntil("ibus-daemon's address", timeout: .seconds(30)) {
            (try? FileManager.default.contentsOfDirectory(atPath: home + "/.config/ibus/bus"))?.isEmpty == false
        }
        var windowEnvironment = Self.environment(display, home: home)
        windowEnvironment["GDK_BACKEND"] = "x11"
        windowEnvironment["GTK_IM_MODULE"] = "ibus"
        windowEnvironment["NO_AT_BRIDGE"] = "1"
        window = try EntryWindow(in: directory.appendingPathComponent("window").path, environment: windowEnvironment)
        let pid = window.pid
        var focused = false
        for _ in 0..<50 where !focused {
            let found = try runProgram(["env", "DISPLAY=\(display)", "xdotool", "search", "--pid", "\(pid)"], seconds: 10).output
            if let id = found.split(whereSeparator: \.isNewline).last.map(String.init) {
                focused = try runProgram(["env", "DISPLAY=\(display)", "xdotool", "windowfocus", "--sync", id], seconds: 10).status == 0
            }
            if !focused { try await Task.sleep(for: .milliseconds(200)) }
        }
        try await window.waitForFocus()
    }

    /// The session's variables: X11, its own home (IBus's address file), a UTF-8 locale.
    static func environment(_ display: String, home: String) -> [String: String] {
        var environment = ["PATH": "/usr/local/bin:/usr/bin:/bin", "DISPLAY": display, "HOME": home, "LANG": "C.UTF-8"]
        environment["VOICEBOX_TEST_RUN"] = ProcessInfo.processInfo.environment["VOICEBOX_TEST_RUN"]
        environment["VOICEBOX_IBUS_X11_SESSION"] = home
        return environment
    }

    var environment: [String: String] { Self.environment(display, home: home) }

    /// One for a test class, started by its first test.
    static func classFixture() -> ClassFixture<IBusX11Session> {
        ClassFixture("ibus-x11", start: { directory in
            try require()
            return try await IBusX11Session(in: directory)
        }, stop: { await $0.stop() })
    }

    /// The state each test starts from: the entry empty and focused, IBus's engine xkb:us::eng.
    func prepareForTest() async throws {
        try await window.clear()
        if try ibusEngine() != "xkb:us::eng" { try setIBusEngine("xkb:us::eng") }
    }

    func ibusEngine() throws -> String? {
        let (status, output) = try runProgram(["/usr/bin/env", "-i"] + environment.map { "\($0.key)=\($0.value)" } + ["ibus", "engine"])
        let name = output.trimmingCharacters(in: .whitespacesAndNewlines)
        return status == 0 && !name.isEmpty ? name : nil
    }

    func setIBusEngine(_ name: String) throws {
        _ = try runProgram(["/usr/bin/env", "-i"] + environment.map { "\($0.key)=\($0.value)" } + ["ibus", "engine", name])
    }

    func stop() async {
        await window.stop()
        for process in [daemon, server] {
            process.signal(SIGTERM)
            if await process.wait(timeout: .seconds(5)) == nil { process.signal(SIGKILL) }
        }
        // What the daemon started and did not end with it (ibus-extension-gtk3 outlives it).
        for signal in [SIGTERM, SIGKILL] {
            for pid in GnomeSession.processes(withEnvironmentEntry: "VOICEBOX_IBUS_X11_SESSION=\(home)") { kill(pid, signal) }
            try? await Task.sleep(for: .milliseconds(300))
        }
    }
}
