import CPocketsphinx
import Glibc
import VoiceboxCore

/// sphinxbase's log is one process-wide hook. This owns it: every message goes to the sink of
/// the log scope open on the calling thread (pocketsphinx logs synchronously, on the thread that
/// called it), which also keeps the lines when asked — that is how a grammar's parse error
/// reaches `RecognitionError.invalidGrammar`. Messages from threads without a scope are dropped:
/// only this module calls pocketsphinx, and it always opens a scope.
enum SphinxLog {
    /// The per-thread slot of the open scope, made (and the hook installed) on first use.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed: \(status)")
        voicebox_sphinx_set_log { level, message in
            SphinxLog.receive(level: level, message: message)
        }
        return key
    }()

    /// Runs `body` (calls into pocketsphinx) with this thread's messages going to `sink`.
    /// Returns the messages at ERROR level or worse, for callers that turn them into reasons.
    static func scope<T>(sink: LogSink?, _ body: () throws -> T) rethrows -> (T, errors: [String]) {
        let scope = Scope(sink: sink)
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(scope).toOpaque())
        defer { pthread_setspecific(key, previous) }
        // A last line without its newline is still a line: flushed before the errors are read,
        // and by the defer when `body` throws (then a no-op otherwise).
        defer { scope.flush() }
        let value = try withExtendedLifetime(scope) { try body() }
        scope.flush()
        return (value, scope.errors)
    }

    private static func receive(level: Int32, message: UnsafePointer<CChar>?) {
        guard let raw = pthread_getspecific(key), let message else { return }
        let scope = Unmanaged<Scope>.fromOpaque(raw).takeUnretainedValue()
        for line in scope.lines.add(String(cString: message), continuing: level == Int32(ERR_INFOCONT.rawValue), level: level) {
            scope.emit(line)
        }
    }

    /// `ERROR: "jsgf.c", line 155: syntax error at line 3 current token 'x'` → the part after
    /// the source location, which is what a person can act on.
    static func reason(_ line: String) -> String {
        guard let match = line.prefixMatch(of: #/[A-Z]+: "[^"]*", line \d+: /#) else { return line }
        return String(line[match.range.upperBound...])
    }

    /// One open scope; only its own thread touches it.
    private final class Scope {
        let sink: LogSink?
        var errors: [String] = []
        var lines = LogLines()
        init(sink: LogSink?) { self.sink = sink }

        func emit(_ line: LogLines.Line) {
            if line.level >= Int32(ERR_ERROR.rawValue) { errors.append(SphinxLog.reason(line.text)) }
            sink?(line.text)
        }

        func flush() {
            if let line = lines.flush() { emit(line) }
        }
    }
}

/// sphinxbase's messages, made into lines. A message usually is one line with its newline, but
/// E_INFOCONT pieces continue the line before them (CMN's 13 values come so), and some messages
/// (errors among them) have no newline: they still end where the next message that is not a
/// continuation begins.
struct LogLines {
    struct Line: Equatable {
        var level: Int32
        var text: String
    }

    /// A line this long is let out without its end, so that no message can grow it for ever.
    static let limit = 4096

    private var pending = ""
    private var level: Int32 = 0

    /// Takes one message; returns the lines it completes (trailing whitespace cut, empty ones dropped).
    mutating func add(_ piece: String, continuing: Bool, level: Int32) -> [Line] {
        var done: [Line] = []
        if !continuing {
            if let line = flush() { done.append(line) }
            self.level = level
        }
        pending += piece
        if piece.last?.isNewline == true || pending.utf8.count > Self.limit, let line = flush() { done.append(line) }
        return done
    }

    /// The line begun and not yet ended, if any.
    mutating func flush() -> Line? {
        var text = pending
        pending = ""
        while text.last?.isWhitespace == true { text.removeLast() }
        return text.isEmpty ? nil : Line(level: level, text: text)
    }
}
