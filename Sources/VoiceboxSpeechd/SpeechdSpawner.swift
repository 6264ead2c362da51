import Dispatch
import Foundation
import Glibc
import VoiceboxSpawn

/// Starts speech-dispatcher the way libspeechd's autospawn does (`speech-dispatcher --spawn
/// --communication-method … --socket-path …|--port …`, `$SPEECHD_CMD` overriding the program; it
/// returns once the server is ready, and refuses when the server's configuration disables autospawn or
/// names another socket), but with an empty signal mask, default signal dispositions and no inherited
/// descriptors, whatever thread calls it.
enum SpeechdSpawner {
    static let timeoutMilliseconds: Int32 = 20_000

    /// nil on success, else why not.
    static func spawn(for address: SpeechdAddress) -> String? {
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
        let program = ProcessInfo.processInfo.environment["SPEECHD_CMD"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "/usr/bin/speech-dispatcher"

        var errorPipe: [Int32] = [-1, -1]
        guard pipe(&errorPipe) == 0 else { return "cannot create a pipe" }
        defer { close(errorPipe[0]) }
        _ = fcntl(errorPipe[0], F_SETFD, FD_CLOEXEC)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
        closeInheritedDescriptors(&actions)

        let spawned = CleanSpawn.spawn(program, arguments, actions: &actions, searchPath: true)
        close(errorPipe[1])
        let pid: pid_t
        switch spawned {
        case .success(let child): pid = child
        case .failure(let error): return "cannot run \(program): \(error)"
        }

        // The launcher closes its standard error when it exits and the daemon has detached from it:
        // read it to the end (bounded), then reap the launcher.
        var output: [UInt8] = []
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(timeoutMilliseconds) * 1_000_000
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            guard now < deadline else {
                return "\(program) did not finish starting within \(timeoutMilliseconds / 1000) s"
            }
            var fd = pollfd(fd: errorPipe[0], events: Int16(POLLIN), revents: 0)
            let ready = poll(&fd, 1, Int32((deadline - now) / 1_000_000) + 1)
            if ready == 0 || (ready < 0 && errno == EINTR) { continue }
            let count = read(errorPipe[0], &buffer, buffer.count)
            if count > 0 {
                output += buffer[0..<count]
            } else if count < 0 && (errno == EINTR || errno == EAGAIN) {
                continue
            } else {
                break
            }
        }
        var status: Int32 = 0
        var reaped: pid_t
        repeat { reaped = waitpid(pid, &status, 0) } while reaped < 0 && errno == EINTR
        // Not reaped (ECHILD: the application ignores SIGCHLD): judge by connecting.
        guard reaped == pid else { return nil }
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        if exited && code == 0 { return nil }
        let message = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return "\(program) refused to start" + (message.isEmpty ? "" : ": \(message)")
    }

    /// Like GLib's g_spawn: the server must not keep any of this process's descriptors open.
    private static func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
        // glibc ≥ 2.34; not imported by Swift's Glibc module (it is a GNU extension).
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
            let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
            if closeFrom(&actions, 3) == 0 { return }
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for descriptor in open.compactMap(Int32.init) where descriptor > 2 {
            if fcntl(descriptor, F_GETFD) >= 0 { posix_spawn_file_actions_addclose(&actions, descriptor) }
        }
    }
}
