import Foundation
import Glibc
import TestSupport
import XCTest

/// A headless wlroots compositor (sway) with one real Wayland client, a foot terminal that writes
/// every byte it receives to a file. sway refuses to run as root, so both run as `nobody` in a
/// runtime directory of theirs; voicebox (root) reaches the compositor by the socket's path.
final class WaylandSession: Sendable {
    let runtime: String
    let output: String
    private let compositor: Subprocess
    private let terminal: Subprocess

    static func require() throws {
        for program in ["sway", "foot", "wtype", "wl-copy", "wl-paste", "runuser"] {
            try XCTSkipUnless(XSession.programPath(program) != nil || access("/usr/sbin/\(program)", X_OK) == 0,
                              "\(program) is not installed (scripts/deps installs it)")
        }
    }

    init(in directory: URL) async throws {
        runtime = directory.appendingPathComponent("wayland").path
        output = runtime + "/received.txt"
        try FileManager.default.createDirectory(atPath: runtime, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: output, contents: nil)
        let config = runtime + "/config"
        try "output HEADLESS-1 resolution 1024x768\n".write(toFile: config, atomically: true, encoding: .utf8)
        // Ctrl+V pastes, as in the applications paste is for (terminals use Ctrl+Shift+V).
        let footConfig = runtime + "/foot.ini"
        try "[key-bindings]\nclipboard-paste=Control+v\n".write(toFile: footConfig, atomically: true, encoding: .utf8)
        let nobody = getpwnam("nobody")!.pointee
        for path in [directory.path, runtime, output, config, footConfig] { chown(path, nobody.pw_uid, nobody.pw_gid) }
        chmod(runtime, 0o700)
        let runuser = access("/usr/sbin/runuser", X_OK) == 0 ? "/usr/sbin/runuser" : "/sbin/runuser"
        let environment = ["env", "XDG_RUNTIME_DIR=\(runtime)", "HOME=\(runtime)", "PATH=/usr/bin:/bin"]
        compositor = try Subprocess(runuser, ["-u", "nobody", "--"] + environment
                                    + ["WLR_BACKENDS=headless", "WLR_LIBINPUT_NO_DEVICES=1", "WLR_RENDERER=pixman",
                                       "sway", "-c", config],
                                    stdoutFD: XSession.devNullForTests, stderrFD: XSession.devNullForTests)
        let runtime = runtime
        try await waitUntil("sway's Wayland socket", timeout: .seconds(15)) {
            FileManager.default.fileExists(atPath: runtime + "/wayland-1")
        }
        terminal = try Subprocess(runuser, ["-u", "nobody", "--"] + environment
                                  + ["WAYLAND_DISPLAY=wayland-1", "foot", "-c", runtime + "/foot.ini", "-e", "/bin/sh", "-c",
                                     "stty raw -echo; exec cat >> \"$0\"", output],
                                  stdoutFD: XSession.devNullForTests, stderrFD: XSession.devNullForTests)
        // sway focuses a new window by itself once foot has drawn it, and the shell then makes the
        // terminal raw. Ready when a probe keystroke arrives (a fixed wait lost the first character
        // on a loaded machine); the probe is then wiped (cat appends, so truncating is safe).
        let output = output, socket = runtime + "/wayland-1"
        try await waitUntil("foot to take keystrokes", timeout: .seconds(20)) {
            guard let probe = try? Subprocess("/usr/bin/wtype", ["."], environment: ["WAYLAND_DISPLAY": socket, "PATH": "/usr/bin"],
                                              stdoutFD: XSession.devNullForTests, stderrFD: XSession.devNullForTests) else { return false }
            _ = await probe.wait(timeout: .seconds(5))
            try? await Task.sleep(for: .milliseconds(200))
            return (FileManager.default.contents(atPath: output) ?? Data()).contains(UInt8(ascii: "."))
        }
        truncate(output, 0)
    }

    /// A Wayland session for voicebox: the compositor's socket by path, no X11.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["WAYLAND_DISPLAY"] = runtime + "/wayland-1"
        environment["XDG_CURRENT_DESKTOP"] = "sway"
        environment["XDG_SESSION_TYPE"] = "wayland"
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

    func stop() async {
        terminal.signal(SIGTERM)
        _ = await terminal.wait(timeout: .seconds(5))
        compositor.signal(SIGTERM)
        _ = await compositor.wait(timeout: .seconds(5))
    }
}

/// `voicebox insert` into a real Wayland client under headless sway: wtype types any text on
/// any layout; paste goes through wl-copy and restores the clipboard.
final class WaylandInsertionTests: XCTestCase {
    private func session() async throws -> (Stack, WaylandSession) {
        let stack = try Stack.require()
        try WaylandSession.require()
        let wayland = try await WaylandSession(in: try makeTemporaryDirectory(self))
        addTeardownBlock { await wayland.stop() }
        return (stack, wayland)
    }

    func testInsertTypesNonASCIITextIntoAWaylandWindow() async throws {
        let (stack, wayland) = try await session()
        let client = try ClientRun(stack, ["insert", "café naïve Größe, go forward"], environment: wayland.environment)
        let status = await client.finish(timeout: .seconds(30))
        XCTAssertEqual(status, 0, client.stderr)
        try await wayland.waitFor("café naïve Größe, go forward")
    }

    func testPasteOnWaylandRestoresTheClipboard() async throws {
        let (stack, wayland) = try await session()
        let copy = try Subprocess("/usr/bin/wl-copy", ["what the user had copied"], environment: wayland.environment,
                                  stdoutFD: XSession.devNullForTests, stderrFD: XSession.devNullForTests)
        _ = await copy.wait(timeout: .seconds(10))
        let client = try ClientRun(stack, ["insert", "--output", "paste", "pasted, déjà vu"], environment: wayland.environment)
        let status = await client.finish(timeout: .seconds(30))
        XCTAssertEqual(status, 0, client.stderr)
        try await wayland.waitFor("pasted, déjà vu")
        let (pasteStatus, clipboard) = try runProgram(["env", "WAYLAND_DISPLAY=\(wayland.runtime)/wayland-1",
                                                       "wl-paste", "--no-newline"], seconds: 10)
        XCTAssertEqual(pasteStatus, 0)
        XCTAssertEqual(clipboard, "what the user had copied")
    }
}
