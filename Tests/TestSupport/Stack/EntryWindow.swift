import Foundation
import Glibc
import XCTest

/// A real GTK 3 window with one focused text entry (python3-gi, gir1.2-gtk-3.0): on Wayland it
/// takes input-method commits through text-input-v3, on X11 through GTK_IM_MODULE. It writes what
/// the entry holds to a file whenever it changes (and its preedit, and its focus), so the test reads
/// what arrived in the window itself. Commands come on its standard input: `clear N` empties the
/// entry and writes N to `acknowledged`.
final class EntryWindow: Sendable {
    let directory: String
    private let process: Subprocess
    private let commands: Int32
    private let sequence = Shared(0)

    static let script = #"""
        import os, sys
        import gi
        gi.require_version('Gtk', '3.0')
        from gi.repository import Gtk, GLib
        directory = sys.argv[1]
        def write(name, text):
            path = os.path.join(directory, name)
            with open(path + '.tmp', 'w', encoding='utf-8') as f:
                f.write(text)
            os.replace(path + '.tmp', path)
        window = Gtk.Window(title='voicebox test entry')
        if len(sys.argv) > 2 and sys.argv[2] == 'textview':
            entry = Gtk.TextView()
            text = entry.get_buffer()
            text.connect('changed', lambda b: write('received', b.get_text(b.get_start_iter(), b.get_end_iter(), False)))
            entry.set_text = lambda value: text.set_text(value)
        else:
            entry = Gtk.Entry()
            if len(sys.argv) > 2 and sys.argv[2].startswith('max='):
                entry.set_max_length(int(sys.argv[2][4:]))
            entry.connect('changed', lambda e: write('received', e.get_text()))
        entry.connect('preedit-changed', lambda e, s: write('preedit', s))
        entry.connect('focus-in-event', lambda *a: write('focus', 'in'))
        entry.connect('focus-out-event', lambda *a: write('focus', 'out'))
        def command(source, condition):
            line = sys.stdin.readline()
            if not line:
                Gtk.main_quit()
                return False
            word, number = line.split()
            if word == 'clear':
                entry.set_text('')
            write('acknowledged', number)
            return True
        GLib.io_add_watch(sys.stdin, GLib.IO_IN | GLib.IO_HUP, command)
        window.add(entry)
        window.connect('destroy', Gtk.main_quit)
        window.show_all()
        entry.grab_focus()
        write('received', '')
        Gtk.main()
        """#

    static func require() throws {
        try XCTSkipUnless(access("/usr/bin/python3", X_OK) == 0, "python3 is not installed (scripts/deps installs it)")
        let gtk = (try? runProgram(["/usr/bin/python3", "-c", "import gi; gi.require_version('Gtk', '3.0')"], seconds: 30).status) ?? 1
        try XCTSkipUnless(gtk == 0, "python3-gi or gir1.2-gtk-3.0 is not installed (scripts/deps installs them)")
    }

    /// Starts the window with `environment` (its whole environment: a display, and GTK's settings).
    /// `textView`: a multi-line GtkTextView instead of the entry (it reports only its cursor's line).
    /// `maxLength`: the entry takes no more characters than this.
    init(in directory: String, environment: [String: String], textView: Bool = false, maxLength: Int? = nil) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Self.script.write(toFile: directory + "/entry.py", atomically: true, encoding: .utf8)
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw POSIXError(.EMFILE) }
        for fd in ends { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        let log = open(directory + "/entry.log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        defer { close(log) }
        process = try Subprocess("/usr/bin/python3", [directory + "/entry.py", directory] + (textView ? ["textview"] : maxLength.map { ["max=\($0)"] } ?? []), environment: environment,
                                 stdinFD: ends[0], stdoutFD: log, stderrFD: log)
        close(ends[0])
        commands = ends[1]
    }

    deinit { close(commands) }

    private func read(_ name: String) -> String? {
        FileManager.default.contents(atPath: directory + "/" + name).map { String(decoding: $0, as: UTF8.self) }
    }

    /// What the entry holds now.
    var received: String { read("received") ?? "" }
    /// Its preedit (the input method's composition shown in it), "" when none.
    var preedit: String { read("preedit") ?? "" }
    var hasFocus: Bool { read("focus") == "in" }
    var isRunning: Bool { process.poll() == nil }
    var pid: pid_t { process.pid }

    func waitForFocus(timeout: Duration = .seconds(30)) async throws {
        try await waitUntil("the entry to have the keyboard focus", timeout: timeout) { self.hasFocus }
    }

    /// Empties the entry and waits until it has.
    func clear() async throws {
        let number = sequence.withLock { $0 += 1; return $0 }
        let line = Array("clear \(number)\n".utf8)
        _ = line.withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
        try await waitUntil("the entry to be emptied", timeout: .seconds(15)) {
            self.read("acknowledged") == "\(number)" && self.received.isEmpty
        }
    }

    func waitFor(_ text: String, timeout: Duration = .seconds(15)) async throws {
        do {
            try await waitUntil("the entry to hold \(text.debugDescription)", timeout: timeout) { self.received == text }
        } catch {
            XCTFail("\(error); it holds \(received.debugDescription)")
        }
    }

    /// Stops the window's process (SIGSTOP): it handles nothing until `resume`, as a window that hangs.
    func pause() { process.signal(SIGSTOP) }
    func resume() { process.signal(SIGCONT) }

    func stop() async {
        process.signal(SIGTERM)
        if await process.wait(timeout: .seconds(5)) == nil {
            process.signal(SIGKILL)
            await process.wait(timeout: .seconds(5))
        }
    }
}
