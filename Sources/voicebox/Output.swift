import Foundation
import VoiceboxBus
import VoiceboxContract
import VoiceboxThreads

/// Standard output and error: whole lines, flushed at once (monitor's lines must not wait in a
/// pipe's buffer), JSON for scripts, and one updating status line on a terminal.
enum Output {
    private static let lock = Locked(())

    static var isTerminal: Bool { isatty(1) == 1 }

    static func line(_ text: String) {
        write(text + "\n", to: 1)
    }

    static func error(_ text: String) {
        write("voicebox: \(text)\n", to: 2)
    }

    static func write(_ text: String, to fd: Int32) {
        lock.withLock { _ in
            var bytes = Array(text.utf8)[...]
            while !bytes.isEmpty {
                let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                bytes = bytes.dropFirst(written)
            }
        }
    }

    /// `object` as one line of JSON, keys sorted.
    static func json(_ object: Any) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else {
            return
        }
        line(String(decoding: data, as: UTF8.self))
    }

    /// A D-Bus value as JSON (numbers, strings, booleans, arrays, objects).
    static func jsonValue(_ value: DBusValue) -> Any {
        switch value.unwrapped {
        case .boolean(let b): b
        case .byte(let n): n
        case .int16(let n): n
        case .uint16(let n): n
        case .int32(let n): n
        case .uint32(let n): n
        case .int64(let n): n
        case .uint64(let n): n
        case .double(let d): d
        case .string(let s), .objectPath(let s), .signature(let s): s
        case .unixFD(let fd): fd
        case .array(_, let items): items.map(jsonValue)
        case .structure(let fields): fields.map(jsonValue)
        case .dictionary(_, _, let entries):
            Dictionary(entries.map { (($0.key.string ?? "\($0.key)"), jsonValue($0.value)) }, uniquingKeysWith: { $1 })
        case .variant(let inner): jsonValue(inner)
        }
    }
}

/// One line of a terminal that is redrawn in place (carriage return, clear to the end) and
/// cleared at the end, so that only the result stays. Does nothing when stdout is no terminal.
final class LiveLine: Sendable {
    private struct State {
        var shown = false
        var finished = false
    }

    private let enabled: Bool
    private let state = Locked(State())

    init(enabled: Bool = Output.isTerminal) {
        self.enabled = enabled
    }

    func show(_ text: String) {
        guard enabled else { return }
        state.withLock { state in
            guard !state.finished else { return }
            state.shown = true
            Output.write("\r\u{1B}[K" + Self.fit(text), to: 1)
        }
    }

    /// Clears the line for good.
    func clear() {
        guard enabled else { return }
        state.withLock { state in
            state.finished = true
            if state.shown { Output.write("\r\u{1B}[K", to: 1) }
            state.shown = false
        }
    }

    /// Keeps the line within the terminal, so it never wraps (a wrapped line cannot be redrawn).
    static func fit(_ text: String) -> String {
        var size = winsize()
        let columns = ioctl(1, UInt(TIOCGWINSZ), &size) == 0 && size.ws_col > 0 ? Int(size.ws_col) : 80
        return text.count < columns ? text : "…" + text.suffix(columns - 2)
    }

    /// `[#####.....]` for a fraction 0 ... 1.
    static func bar(_ fraction: Double, width: Int = 30) -> String {
        let filled = Int((min(max(fraction, 0), 1) * Double(width)).rounded())
        return "[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "]"
    }
}

/// Ctrl-C, SIGTERM and SIGHUP, seen by the program instead of ending it: `handler` runs once,
/// on a queue of its own. Installed once per process.
enum Interrupts {
    private static let fired = Locked(false)

    static func onInterrupt(_ handler: @escaping @Sendable (Int32) -> Void) {
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                guard fired.withLock({ fired in defer { fired = true }; return !fired }) else { return }
                handler(number)
            }
            source.resume()
            // Held for the life of the process (a source let go stops delivering): one
            // reference given up on purpose instead of a global of mutable state.
            _ = Unmanaged.passRetained(source as AnyObject)
        }
    }
}

