import CSpeechd
import Foundation
import Glibc
import VoiceboxCore

/// Where speech-dispatcher listens, in the syntax of `$SPEECHD_ADDRESS`:
/// `unix_socket[:PATH]` or `inet_socket[:HOST[:PORT]]`.
enum SpeechdAddress: Sendable, Equatable {
    case unixSocket(path: String)
    case inetSocket(host: String, port: Int32)

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
            return .inetSocket(host: host, port: Int32(SPEECHD_DEFAULT_PORT))
        default:
            return nil
        }
    }

    /// libspeechd's default: `$XDG_RUNTIME_DIR/speech-dispatcher/speechd.sock` (glib falls back to the
    /// user cache directory when the variable is unset).
    static func defaultSocketPath() -> String {
        let environment = ProcessInfo.processInfo.environment
        let runtime = environment["XDG_RUNTIME_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (environment["XDG_CACHE_HOME"] ?? NSHomeDirectory() + "/.cache")
        return runtime + "/speech-dispatcher/speechd.sock"
    }

    /// Where to connect: `configured` (the syntax of `$SPEECHD_ADDRESS`), else libspeechd's public
    /// `spd_get_default_address` (`$SPEECHD_ADDRESS`, then the user's runtime directory).
    static func resolve(_ configured: String?) -> Result<SpeechdAddress, SynthesizerError> {
        if let configured {
            guard let parsed = parse(configured) else {
                return .failure(.unavailable("unsupported speech-dispatcher address \"\(configured)\""))
            }
            return .success(parsed)
        }
        var error: UnsafeMutablePointer<CChar>? = nil
        guard let address = spd_get_default_address(&error) else {
            let reason = error.map { String(cString: $0) } ?? "no speech-dispatcher address"
            free(error)
            return .failure(.unavailable(reason))
        }
        defer { SPDConnectionAddress__free(address) }
        switch address.pointee.method {
        case SPD_METHOD_UNIX_SOCKET:
            return .success(.unixSocket(path: address.pointee.unix_socket_name.map { String(cString: $0) }
                                        ?? defaultSocketPath()))
        case SPD_METHOD_INET_SOCKET:
            return .success(.inetSocket(host: address.pointee.inet_socket_host.map { String(cString: $0) } ?? "127.0.0.1",
                                        port: address.pointee.inet_socket_port))
        default:
            return .failure(.unavailable("unsupported speech-dispatcher address method"))
        }
    }
}
