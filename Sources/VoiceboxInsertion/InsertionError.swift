/// Why text could not be inserted: one sentence. `missingProgram` (a backend is not installed)
/// and `noSession` are what the client turns into its own exit status.
public enum InsertionError: Error, Equatable, CustomStringConvertible {
    /// e.g. "typing on X11 needs xdotool: apt install xdotool"
    case missingProgram(purpose: String, program: String, package: String)
    /// Neither DISPLAY nor WAYLAND_DISPLAY: no window to type into.
    case noSession
    /// A helper program failed or did not finish in time.
    case failed(String)

    public var description: String {
        switch self {
        case .missingProgram(let purpose, let program, let package): "\(purpose) needs \(program): apt install \(package)"
        case .noSession: "no graphical session to insert text into (neither DISPLAY nor WAYLAND_DISPLAY is set)"
        case .failed(let message): message
        }
    }
}
