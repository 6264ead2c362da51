import Glibc

/// Starting a child process with a clean signal state, whatever the calling thread blocks and the
/// process ignores: an empty signal mask and the default disposition for every catchable signal.
/// (A dispatch worker blocks nearly every signal, voiceboxd blocks TERM and INT for its sigwait
/// and ignores PIPE; a child inherits all of that and would then ignore TERM for the rest of its
/// life — measured with speech-dispatcher spawned from a worker.)
public enum CleanSpawn {
    /// posix_spawn (or posix_spawnp with `searchPath`) of `path` with `arguments`, `actions` for its
    /// descriptors and `environment` (`KEY=value`; nil: this process's). The child's pid, or the error.
    public static func spawn(_ path: String, _ arguments: [String], actions: UnsafePointer<posix_spawn_file_actions_t>?,
                             environment: [String]? = nil, searchPath: Bool = false) -> Result<pid_t, Errno> {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var all = sigset_t()
        sigemptyset(&all)
        for signal in 1..<32 where signal != SIGKILL && signal != SIGSTOP { sigaddset(&all, Int32(signal)) }
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = environment.map { $0.map { strdup($0) } + [nil] }
        defer { envp?.forEach { free($0) } }
        var pid: pid_t = 0
        let result = envp.map { envp in
            searchPath ? posix_spawnp(&pid, path, actions, &attributes, argv, envp)
                       : posix_spawn(&pid, path, actions, &attributes, argv, envp)
        } ?? (searchPath ? posix_spawnp(&pid, path, actions, &attributes, argv, environ)
                         : posix_spawn(&pid, path, actions, &attributes, argv, environ))
        return result == 0 ? .success(pid) : .failure(Errno(result))
    }

    public enum Exit { case exited, stillRunning, cannotWait }

    /// Waits for the child to exit, at most `timeout`, sleeping in poll(2) on its pidfd (woken by the
    /// exit itself). `.exited`: waitpid now returns at once. `.cannotWait`: no pidfd_open here
    /// (Linux before 5.3, glibc before 2.36).
    public static func waitForExit(_ pid: pid_t, timeout: Duration) -> Exit {
        typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_open") else { return .cannotWait }
        let descriptor = unsafeBitCast(symbol, to: PidfdOpen.self)(pid, 0)
        guard descriptor >= 0 else { return .cannotWait }
        defer { close(descriptor) }
        let deadline = ContinuousClock.now + timeout
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return .stillRunning }
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(86_400_000, left.components.seconds * 1000
                                         + (left.components.attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000))
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 { return .exited }
            if ready < 0 && errno != EINTR { return .cannotWait }
        }
    }
}

/// An errno value from posix_spawn, with its text.
public struct Errno: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Int32
    public init(_ code: Int32) { self.code = code }
    public var description: String { String(cString: strerror(code)) }
}
