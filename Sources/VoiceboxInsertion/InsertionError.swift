import Glibc

/// Why text could not be inserted: one sentence. `missingProgram` (a backend is not installed)
/// and `noSession` are what the client turns into its own exit status.
public enum InsertionError: Error, Equatable, CustomStringConvertible {
    /// e.g. "typing on X11 needs xdotool: apt install xdotool"
    case missingProgram(purpose: String, program: String, package: String)
    /// Neither DISPLAY nor WAYLAND_DISPLAY: no window to type into.
    case noSession
    /// A helper program failed or did not finish in time (its own words in the message).
    case failed(String)
    /// It ran, but the text cannot be known to have arrived: the window closed or lost the focus
    /// while typing, or did not ask for the pasted text.
    case unconfirmed(String)
    /// SIGINT, SIGTERM or SIGHUP came while typing: typing stopped between two chunks (see
    /// InsertionGuard); the caller keeps the text and exits as the signal asked.
    case interrupted(Int32)

    public var description: String {
        switch self {
        case .missingProgram(let purpose, let program, let package): "\(purpose) needs \(program): apt install \(package)"
        case .noSession: "no graphical session to insert text into (neither DISPLAY nor WAYLAND_DISPLAY is set)"
        case .failed(let message), .unconfirmed(let message): message
        case .interrupted(let number): "interrupted by \(number == SIGINT ? "SIGINT" : number == SIGTERM ? "SIGTERM" : number == SIGHUP ? "SIGHUP" : "signal \(number)") while typing"
        }
    }
}
