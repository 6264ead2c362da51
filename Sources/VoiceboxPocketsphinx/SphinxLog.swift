import CPocketsphinx
import Glibc

/// sphinxbase's log is one process-wide hook. This owns it: every message goes to the sink of
/// the log scope open on the calling thread (pocketsphinx logs synchronously, on the thread that
/// called it), which also keeps the lines when asked — that is how a grammar's parse error
/// reaches `RecognitionError.invalidGrammar`. Messages from threads without a scope are dropped:
/// only this module calls pocketsphinx, and it always opens a scope.
final class SphinxLog: @unchecked Sendable {
    // @unchecked: `key` is written once in init and only read afterwards; the per-thread values
    // behind it are touched only by their own thread.
    static let shared = SphinxLog()

    private let key: pthread_key_t

    private init() {
        var key = pthread_key_t()
        let status = pthread_key_create(&key, nil)
        precondition(status == 0, "pthread_key_create failed: \(status)")
        self.key = key
        voicebox_sphinx_set_log { level, message in
            SphinxLog.shared.receive(level: level, message: message)
        }
    }

    /// Runs `body` (calls into pocketsphinx) with this thread's messages going to `sink`.
    /// Returns the messages at ERROR level or worse, for callers that turn them into reasons.
    func scope<T>(sink: LogSink?, _ body: () throws -> T) rethrows -> (T, errors: [String]) {
        let scope = Scope(sink: sink)
        let previous = pthread_getspecific(key)
        pthread_setspecific(key, Unmanaged.passUnretained(scope).toOpaque())
        defer { pthread_setspecific(key, previous) }
        // A last line without its newline is still a line.
        defer { scope.flush() }
        let value = try withExtendedLifetime(scope) { try body() }
        scope.flush()
        return (value, scope.errors)
    }

    private func receive(level: Int32, message: UnsafePointer<CChar>?) {
        guard let raw = pthread_getspecific(key), let message else { return }
        let scope = Unmanaged<Scope>.fromOpaque(raw).takeUnretainedValue()
        // A line can come in pieces (E_INFOCONT continues it, e.g. CMN's 13 values): it is
        // complete at its newline.
        let piece = String(cString: message)
        scope.pending += piece
        scope.pendingLevel = max(scope.pendingLevel, level)
        if piece.last?.isNewline == true { scope.flush() }
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
        var pending = ""
        var pendingLevel: Int32 = 0
        init(sink: LogSink?) { self.sink = sink }

        func flush() {
            var text = pending
            let level = pendingLevel
            pending = ""
            pendingLevel = 0
            while text.last?.isWhitespace == true { text.removeLast() }
            guard !text.isEmpty else { return }
            if level >= Int32(ERR_ERROR.rawValue) { errors.append(SphinxLog.reason(text)) }
            sink?(text)
        }
    }
}

/// Where pocketsphinx's own messages go (each one line, prefixed with its level as sphinxbase
/// prints it); meant for the service's debug log.
public typealias LogSink = @Sendable (String) -> Void
