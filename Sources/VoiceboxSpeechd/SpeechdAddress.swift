import Glibc
import VoiceboxCore

/// Where speech-dispatcher listens, in the syntax of `$SPEECHD_ADDRESS`:
/// `unix_socket[:PATH]` or `inet_socket[:HOST[:PORT]]`.
enum SpeechdAddress: Sendable, Equatable {
    case unixSocket(path: String)
    case inetSocket(host: String, port: Int32)

    /// speech-dispatcher's port when `inet_socket` names none (SPEECHD_DEFAULT_PORT).
    static let defaultPort: Int32 = 6560

    /// Unlike libspeechd's own parser, everything after `unix_socket:` is the path (it may hold a colon).
    static func parse(_ text: String) -> SpeechdAddress? {
        let method = text.prefix { $0 != ":" }
        let rest = text.dropFirst(method.count + (text.count > method.count ? 1 : 0))
        switch method {
        case "unix_socket":
            return .unixSocket(path: rest.isEmpty ? defaultSocketPath() : String(rest))
        case "inet_socket":
            let parts = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let host = parts.first.map(String.init).flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1"
            guard parts.count < 2 else {
                guard let port = Int32(parts[1]), port > 0 else { return nil }
                return .inetSocket(host: host, port: port)
            }
            return .inetSocket(host: host, port: defaultPort)
        default:
            return nil
        }
    }

    /// libspeechd's default: `$XDG_RUNTIME_DIR/speech-dispatcher/speechd.sock` (glib falls back to the
    /// user cache directory when the variable is unset).
    static func defaultSocketPath() -> String {
        let runtime = ProcessEnvironment.value("XDG_RUNTIME_DIR").flatMap { $0.isEmpty ? nil : $0 }
            ?? (ProcessEnvironment.value("XDG_CACHE_HOME") ?? ProcessEnvironment.homeDirectory + "/.cache")
        return runtime + "/speech-dispatcher/speechd.sock"
    }

    /// Where to connect: `configured` (the syntax of `$SPEECHD_ADDRESS`), else `$SPEECHD_ADDRESS`,
    /// else the socket in the user's runtime directory: what libspeechd's `spd_get_default_address`
    /// does, written here so that the service maps neither libspeechd nor the glib it brings.
    static func resolve(_ configured: String?,
                        environment: [String: String] = ProcessEnvironment.variables)
        -> Result<SpeechdAddress, SynthesizerError> {
        guard let address = configured ?? environment["SPEECHD_ADDRESS"].flatMap({ $0.isEmpty ? nil : $0 }) else {
            return .success(.unixSocket(path: defaultSocketPath()))
        }
        guard let parsed = parse(address) else {
            return .failure(.unavailable("unsupported speech-dispatcher address \"\(address)\""))
        }
        return .success(parsed)
    }
}
