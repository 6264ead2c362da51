import Glibc
import VoiceboxCore
import VoiceboxSpawn

/// Starts speech-dispatcher the way libspeechd's autospawn does (`speech-dispatcher --spawn
/// --communication-method … --socket-path …|--port …`, `$SPEECHD_CMD` overriding the program; it
/// returns once the server is ready, and refuses when the server's configuration disables autospawn or
/// names another socket), but with an empty signal mask, default signal dispositions and no inherited
/// descriptors, whatever thread calls it (`Spawn`).
enum SpeechdSpawner {
    /// nil on success, else why not. `start`: how long the launcher may take (`speechd-start`).
    static func spawn(for address: SpeechdAddress, within start: Duration) -> String? {
        var arguments = ["--spawn", "--communication-method"]
        switch address {
        case .unixSocket(let path):
            arguments += ["unix_socket", "--socket-path", path]
        case .inetSocket(let host, let port):
            guard host == "localhost" || host.hasPrefix("127.") else {
                return "the address \(host) is not on this machine"
            }
            arguments += ["inet_socket", "--port", String(port)]
        }
        let program = ProcessEnvironment.value("SPEECHD_CMD").flatMap { $0.isEmpty ? nil : $0 }
            ?? "/usr/bin/speech-dispatcher"

        // Like GLib's g_spawn: the server keeps none of this process's descriptors (the default).
        var spec = ChildSpec(program, arguments)
        spec.searchPath = true
        spec.standardError = .pipe
        let ending: Spawn.Ending
        do {
            // The launcher exits, and the server it starts closes the launcher's standard error,
            // once the server is ready (or has refused): read it to its end, bounded.
            ending = try Spawn.run(spec, timeout: start, untilPipesClose: true)
        } catch {
            return error.description
        }
        if ending.timedOut { return "\(program) did not finish starting within \(SpeechdTimings.text(start.inSeconds))" }
        switch ending.termination {
        case .exited(0): return nil
        case .unknown: return nil  // reaped elsewhere (the application ignores SIGCHLD): judge by connecting
        default:
            let message = ending.errorText
            return "\(program) refused to start" + (message.isEmpty ? " (\(ending.termination))" : ": \(message)")
        }
    }
}
