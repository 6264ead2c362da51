import Foundation

/// Finds helper programs on PATH, and names the Debian package of a missing one.
public enum Programs {
    static let packages = ["xdotool": "xdotool", "xclip": "xclip", "wtype": "wtype", "ydotool": "ydotool",
                           "wl-copy": "wl-clipboard", "wl-paste": "wl-clipboard", "paplay": "pulseaudio-utils",
                           "xmodmap": "x11-xserver-utils", "xprop": "x11-utils", "swaymsg": "sway"]

    /// The program's path on PATH; `purpose` words the error when it is missing
    /// ("typing on X11" → "typing on X11 needs xdotool: apt install xdotool").
    static func find(_ program: String, for purpose: String,
                     path: String? = ProcessInfo.processInfo.environment["PATH"]) throws(InsertionError) -> String {
        if let found = lookUp(program, path: path) { return found }
        throw .missingProgram(purpose: purpose, program: program, package: packages[program] ?? program)
    }

    public static func lookUp(_ program: String, path: String? = ProcessInfo.processInfo.environment["PATH"]) -> String? {
        for directory in (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":") {
            let candidate = "\(directory)/\(program)"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// Runs `program` (found on PATH) and fails with a sentence if it does not succeed.
    @discardableResult
    static func run(_ program: String, for purpose: String, _ arguments: [String], input: [UInt8]? = nil,
                    captureOutput: Bool = false, timeout: Duration = .seconds(5)) throws(InsertionError) -> [UInt8] {
        let path = try find(program, for: purpose)
        let result = try ChildProcess.run(path, arguments, input: input, captureOutput: captureOutput, timeout: timeout)
        if result.timedOut { throw .failed("\(program) did not finish within \(timeout)") }
        guard result.status == 0 else { throw .failed(failure(program, result)) }
        return result.output
    }

    /// A failed run in one line, in the program's own words when it said any
    /// ("xdotool: Error: Can't open display: :99; Failed creating new xdo instance").
    static func failure(_ program: String, _ result: ChildProcess.Result) -> String {
        let lines = result.errorText.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        guard !lines.isEmpty else { return "\(program) failed (exit status \(result.status))" }
        return "\(program): " + lines.joined(separator: "; ")
    }
}
