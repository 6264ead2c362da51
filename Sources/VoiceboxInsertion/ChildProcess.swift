import VoiceboxSpawn

/// One helper program (xdotool, xclip, wl-copy...) run to its end (`Spawn.run`): its arguments as
/// an array (the text is one of them, never part of a shell string), its standard input written
/// from memory, its output read back, and the whole run bounded by a timeout.
public struct ChildProcess {
    public struct Result: Sendable {
        /// The exit status, or 128 + the signal that ended it.
        public var status: Int32
        public var output: [UInt8]
        /// Its standard error (the first 64 KiB): the program's own complaint, for messages.
        public var error: [UInt8]
        public var timedOut: Bool
        /// How it ended, decoded (`exited with status 1`, `killed by SIGSEGV (…)`).
        public var termination: Termination

        /// Standard error as text, trimmed.
        public var errorText: String {
            let text = String(decoding: error, as: UTF8.self)
            return String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        }
    }

    /// Runs `path` with `arguments`. `input` is written to its standard input (nil: /dev/null);
    /// with `captureOutput` its standard output is returned (otherwise it goes to /dev/null).
    /// Standard error is always captured. Output is read until the program exits, so one that forks
    /// into the background, as xclip does, does not hold the call up. After `timeout` it is killed.
    public static func run(_ path: String, _ arguments: [String], input: [UInt8]? = nil, captureOutput: Bool = false,
                           timeout: Duration = .seconds(5)) throws(InsertionError) -> Result {
        var spec = ChildSpec(path, arguments)
        spec.standardOutput = captureOutput ? .pipe : .null
        spec.standardError = .pipe
        do {
            let ending = try Spawn.run(spec, input: input, timeout: timeout)
            return Result(status: ending.termination.shellStatus, output: ending.output, error: ending.error,
                          timedOut: ending.timedOut, termination: ending.termination)
        } catch {
            throw InsertionError.failed(error.description)
        }
    }
}
