import Foundation
import Glibc
import XCTest

/// A headless wlroots compositor (sway) with one real Wayland client, a foot terminal as it comes
/// (it pastes with Ctrl+Shift+V) that writes every byte it receives to a file. sway refuses to run
/// as root, so both run as `nobody` (setpriv: the process started is the program itself, so
/// stopping it stops it) in a runtime directory of theirs, which is also their working directory:
/// the checkout may be in a home `nobody` cannot enter (Debian makes homes 0700), and foot cannot
/// start its shell in a directory it cannot enter. voicebox (root) reaches the compositor by the
/// socket's path and sway's IPC by SWAYSOCK. A virtual keyboard is kept for the whole session, as a
/// desktop has a keyboard: on a seat without one, each wtype run creates the only keyboard and its
/// first key races the focus (measured: 2 of 5 single keys arrived).
final class WaylandSession: Sendable {
    let runtime: String
    let output: String
    private let compositor: Subprocess
    private let terminal: Subprocess
    private let keyboard: Subprocess

    static func require() throws {
        for program in ["sway", "swaymsg", "foot", "wtype", "wl-copy", "wl-paste", "setpriv"] {
            try XCTSkipUnless(XSession.programPath(program) != nil || access("/usr/sbin/\(program)", X_OK) == 0,
                              "\(program) is not installed (scripts/deps installs it)")
        }
    }

    /// A failure half-way stops what was started: each Subprocess ends (SIGKILL) with its owner, and
    /// each is the program itself, not a parent that would leave it behind.
    init(in directory: URL) async throws {
        runtime = directory.appendingPathComponent("wayland").path
        output = runtime + "/received.txt"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let config = runtime + "/config"
        try "output HEADLESS-1 resolution 1024x768\n".write(toFile: config, atomically: true, encoding: .utf8)
        let nobody = getpwnam("nobody")!.pointee
        for path in [directory.path, runtime, output, config] { chown(path, nobody.pw_uid, nobody.pw_gid) }
        chmod(runtime, 0o700)
        let setpriv = XSession.programPath("setpriv") ?? "/usr/bin/setpriv"
        let asNobody = ["--reuid=\(nobody.pw_uid)", "--regid=\(nobody.pw_gid)", "--clear-groups", "--",
                        "/usr/bin/env", "-C", runtime, "XDG_RUNTIME_DIR=\(runtime)", "HOME=\(runtime)", "PATH=/usr/bin:/bin"]
        compositor = try Subprocess(setpriv, asNobody + ["WLR_BACKENDS=headless", "WLR_LIBINPUT_NO_DEVICES=1", "WLR_RENDERER=pixman",
                                                         "sway", "-c", config],
                                    stdoutFD: XSession.devNullForTests, stderrFD: XSession.devNullForTests)
        let runtime = runtime, socket = runtime + "/wayland-1"
        try await waitUntil("sway's Wayland socket", timeout: .seconds(15)) { FileManager.default.fileExists(atPath: socket) }
        keyboard = try Subprocess("/usr/bin/wtype", ["-s", "86400000", ""], environment: ["WAYLAND_DISPLAY": socket, "PATH": "/usr/bin"],
                                  stdoutFD: XSession.devNullForTests, stderrFD: XSession.devNullForTests)
        terminal = try Subprocess(setpriv, asNobody + ["WAYLAND_DISPLAY=wayland-1", "foot", "-e", "/bin/sh", "-c",
                                                       "stty raw -echo; exec cat >> \"$0\"", output],
                                  stdoutFD: XSession.devNullForTests, stderrFD: XSession.devNullForTests)
        // sway focuses a new window by itself once foot has drawn it, and the shell then makes the
        // terminal raw. Ready when a probe keystroke arrives (a fixed wait lost the first character
        // on a loaded machine); the probe is then wiped (cat appends, so truncating is safe).
        let output = output
        try await waitUntil("foot to take keystrokes", timeout: .seconds(20)) {
            guard let probe = try? Subprocess("/usr/bin/wtype", ["."], environment: ["WAYLAND_DISPLAY": socket, "PATH": "/usr/bin"],
                                              stdoutFD: XSession.devNullForTests, stderrFD: XSession.devNullForTests) else { return false }
            _ = await probe.wait(timeout: .seconds(5))
            try? await Task.sleep(for: .milliseconds(200))
            return (FileManager.default.contents(atPath: output) ?? Data()).contains(UInt8(ascii: "."))
        }
        truncate(output, 0)
    }

    /// sway's IPC socket (sway-ipc.UID.PID.sock in its runtime directory).
    var swaySocket: String? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: runtime)) ?? []
        return names.first { $0.hasPrefix("sway-ipc.") && $0.hasSuffix(".sock") }.map { runtime + "/" + $0 }
    }

    /// A Wayland session for voicebox: the compositor's socket by path, no X11.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["WAYLAND_DISPLAY"] = runtime + "/wayland-1"
        environment["XDG_CURRENT_DESKTOP"] = "sway"
        environment["XDG_SESSION_TYPE"] = "wayland"
        environment["SWAYSOCK"] = swaySocket
        environment["LC_ALL"] = "C.UTF-8"
        environment["DISPLAY"] = nil
        return environment
    }

    var received: String {
        String(decoding: FileManager.default.contents(atPath: output) ?? Data(), as: UTF8.self)
    }

    func waitFor(_ text: String) async throws {
        do {
            try await waitUntil("the Wayland window to receive \(text.debugDescription)", timeout: .seconds(15)) {
                self.received == text
            }
        } catch {
            XCTFail("\(error); it received \(received.debugDescription)")
        }
    }

    /// Closes the terminal window (as a user would, mid-typing).
    func closeTerminal() async {
        terminal.signal(SIGKILL)
        _ = await terminal.wait(timeout: .seconds(5))
    }

    func stop() async {
        terminal.signal(SIGTERM)
        _ = await terminal.wait(timeout: .seconds(5))
        keyboard.signal(SIGTERM)
        _ = await keyboard.wait(timeout: .seconds(5))
        compositor.signal(SIGTERM)
        _ = await compositor.wait(timeout: .seconds(5))
    }
}

extension XCTestCase {
    /// A headless sway with a focused foot, stopped when the test ends (skips where sway is missing).
    func waylandSession() async throws -> (Stack, WaylandSession) {
        let stack = try Stack.require()
        try WaylandSession.require()
        let wayland = try await WaylandSession(in: try makeTemporaryDirectory(self))
        addTeardownBlock { await wayland.stop() }
        return (stack, wayland)
    }
}
