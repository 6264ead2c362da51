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

    /// A `SPDConnectionAddress` allocated with malloc/strdup, to be freed with `SPDConnectionAddress__free`.
    func makeCAddress() -> UnsafeMutablePointer<SPDConnectionAddress> {
        let raw = calloc(1, MemoryLayout<SPDConnectionAddress>.size)!
        let address = raw.bindMemory(to: SPDConnectionAddress.self, capacity: 1)
        switch self {
        case .unixSocket(let path):
            address.pointee.method = SPD_METHOD_UNIX_SOCKET
            address.pointee.unix_socket_name = strdup(path)
        case .inetSocket(let host, let port):
            address.pointee.method = SPD_METHOD_INET_SOCKET
            address.pointee.inet_socket_host = strdup(host)
            address.pointee.inet_socket_port = port
        }
        return address
    }
}

/// A libspeechd connection handed from the thread that opened it to the one thread that uses it.
///
/// `@unchecked Sendable` is safe because the pointer is transferred exactly once (opened on a connector
/// or listing queue, then used, closed and freed only by its receiver) and never touched by the sender
/// again; libspeechd's own event thread only touches the fields libspeechd owns.
struct SpeechdHandle: @unchecked Sendable {
    let connection: UnsafeMutablePointer<SPDConnection>
}

enum SpeechdConnector {
    /// Opens a connection (blocking: connect(2), and with `autospawn` possibly starting the server).
    /// `address` nil means libspeechd's default, which honours `$SPEECHD_ADDRESS`.
    static func open(address: String?, autospawn: Bool, clientName: String, connectionName: String,
                     mode: SPDConnectionMode) -> Result<SpeechdHandle, SynthesizerError> {
        _ = SpeechdRouter.sigpipeIgnored
        var error: UnsafeMutablePointer<CChar>? = nil
        let cAddress: UnsafeMutablePointer<SPDConnectionAddress>
        if let address {
            guard let parsed = SpeechdAddress.parse(address) else {
                return .failure(.unavailable("unsupported speech-dispatcher address \"\(address)\""))
            }
            cAddress = parsed.makeCAddress()
        } else {
            guard let fromEnvironment = spd_get_default_address(&error) else {
                return .failure(.unavailable(takeError(&error) ?? "no speech-dispatcher address"))
            }
            cAddress = fromEnvironment
        }
        defer { SPDConnectionAddress__free(cAddress) }
        // Never with libspeechd's own autospawn: it spawns the server from this thread, a dispatch
        // worker whose signal mask blocks nearly everything, and the server inherits that mask (measured:
        // SigBlk fffffffe3bfbea27), so it would ignore SIGTERM and SIGHUP for the rest of its life.
        if let connection = spd_open2(clientName, connectionName, nil, mode, cAddress, 0, &error) {
            return .success(SpeechdHandle(connection: connection))
        }
        var refusal = takeError(&error) ?? "cannot connect to speech-dispatcher"
        guard autospawn else { return .failure(.unavailable(refusal)) }
        if refusal.hasSuffix(" Autospawn: Autospawn disabled") {
            refusal.removeLast(" Autospawn: Autospawn disabled".count)
        }
        if let spawnError = SpeechdSpawner.spawn(for: cAddress.pointee) {
            return .failure(.unavailable("\(refusal) Autospawn: \(spawnError)"))
        }
        guard let connection = spd_open2(clientName, connectionName, nil, mode, cAddress, 0, &error) else {
            return .failure(.unavailable(takeError(&error) ?? "cannot connect to the spawned speech-dispatcher"))
        }
        return .success(SpeechdHandle(connection: connection))
    }

    private static func takeError(_ error: inout UnsafeMutablePointer<CChar>?) -> String? {
        guard let pointer = error else { return nil }
        defer { free(pointer); error = nil }
        return String(cString: pointer)
    }

    /// Closes a live threaded connection. spd_close would pthread_cancel libspeechd's event thread in
    /// the middle of its blocking read (inside stdio, holding the stream's lock); instead ask the server
    /// to end the connection (SSIP `QUIT`), so that thread reads the end of the socket, closes the
    /// stream and exits by itself, then spd_close. Bounded: falls back to plain spd_close after 1 s.
    static func closeGracefully(_ connection: UnsafeMutablePointer<SPDConnection>) {
        if !eventThreadEnded(connection) {
            _ = spd_execute_command(connection, "QUIT")
            var waited = 0
            while !eventThreadEnded(connection), waited < 1000 {
                usleep(1000)
                waited += 1
            }
        }
        if eventThreadEnded(connection) {
            usleep(2000) // from `stream = NULL` to pthread_exit it only signals a condition variable
            closeAfterEventThreadEnded(connection)
        } else {
            spd_close(connection)
        }
    }

    /// Closes a connection whose event thread has already ended because the server went away. In
    /// libspeechd 0.11.4 that thread fcloses the stream (and so the descriptor) and sets `stream` to
    /// NULL, and spd_close only fcloses a non-NULL stream: the descriptor is closed exactly once.
    /// (Older releases also called close(socket) in spd_close; -1 keeps that harmless.)
    static func closeAfterEventThreadEnded(_ connection: UnsafeMutablePointer<SPDConnection>) {
        connection.pointee.socket = -1
        spd_close(connection)
    }

    /// True once libspeechd has seen the end of the connection: its reader (the event thread, or the
    /// caller in single mode) fcloses the stream and sets `stream` to NULL; the event thread then exits.
    /// From another thread this is a plain aligned pointer load of a field libspeechd writes once.
    static func eventThreadEnded(_ connection: UnsafeMutablePointer<SPDConnection>) -> Bool {
        connection.pointee.stream == nil
    }

    /// The event thread of a threaded connection. libspeechd 0.11 keeps it as the first member of the
    /// private `struct SPDConnection_threaddata` behind `td`; only used to tell apart two connections
    /// that two different servers gave the same client id.
    static func eventThread(_ connection: UnsafeMutablePointer<SPDConnection>) -> pthread_t? {
        guard connection.pointee.mode == SPD_MODE_THREADED, let td = connection.pointee.td else { return nil }
        return UnsafeRawPointer(td).load(as: pthread_t.self)
    }
}

/// Starts speech-dispatcher the way libspeechd's autospawn does (`speech-dispatcher --spawn
/// --communication-method … --socket-path …|--port …`, `$SPEECHD_CMD` overriding the program; it
/// returns once the server is ready, and refuses when the server's configuration disables autospawn or
/// names another socket), but with an empty signal mask, default signal dispositions and no inherited
/// descriptors, whatever thread calls it.
enum SpeechdSpawner {
    static let timeoutMilliseconds: Int32 = 20_000

    /// nil on success, else why not.
    static func spawn(for address: SPDConnectionAddress) -> String? {
        var arguments = ["--spawn", "--communication-method"]
        switch address.method {
        case SPD_METHOD_UNIX_SOCKET:
            guard let path = address.unix_socket_name else { return "no socket path" }
            arguments += ["unix_socket", "--socket-path", String(cString: path)]
        case SPD_METHOD_INET_SOCKET:
            let host = address.inet_socket_host.map { String(cString: $0) } ?? "127.0.0.1"
            guard host == "localhost" || host.hasPrefix("127.") else {
                return "the address \(host) is not on this machine"
            }
            arguments += ["inet_socket", "--port", String(address.inet_socket_port)]
        default:
            return "unsupported address"
        }
        let program = ProcessInfo.processInfo.environment["SPEECHD_CMD"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "/usr/bin/speech-dispatcher"

        var errorPipe: [Int32] = [-1, -1]
        guard pipe(&errorPipe) == 0 else { return "cannot create a pipe" }
        defer { close(errorPipe[0]) }
        _ = fcntl(errorPipe[0], F_SETFD, FD_CLOEXEC)

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

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, errorPipe[1], 2)
        closeInheritedDescriptors(&actions)

        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, program, &actions, &attributes, argv, environ)
        close(errorPipe[1])
        guard spawned == 0 else { return "cannot run \(program): \(String(cString: strerror(spawned)))" }

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

/// Notices the death of speech-dispatcher without polling: a thread blocks in poll(2) on a duplicate of
/// the connection's socket, asking only for POLLRDHUP (POLLHUP/POLLERR/POLLNVAL are always reported),
/// so it never competes with libspeechd's reader for data; a pipe wakes it to stop. Zero CPU while idle.
///
/// The duplicate keeps the socket open even after libspeechd closes its own descriptor, so the hang-up
/// is seen on the right socket whatever happens to the original descriptor number.
///
/// It also rescues the owner queue from a race in libspeechd 0.11.4: `spd_send_data_wo_mutex` checks
/// `stream`, then locks `mutex_reply_ready`, writes and waits on `cond_reply_ready`; if the event thread
/// sees the end of the socket and signals (once, then exits) between that check and the wait, the caller
/// waits forever. So once the event thread has ended, this thread signals `cond_reply_ready` (under its
/// mutex) a few times; a waiter then finds no reply and the call fails instead of hanging. It only does
/// so after `stream` became NULL (the server is gone for sure), and the connection is only closed after
/// `stop()` has joined this thread, so the condition variable is alive while it is signalled.
final class HangupWatcher: Sendable {
    private let socket: Int32
    /// A pipe: the thread polls `wakeRead`, `stop()` writes to `wakeWrite`.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let finished = DispatchSemaphore(value: 0)
    private let handle: SpeechdHandle

    /// Starts watching. nil when the socket cannot be duplicated (it is already closed: the server is
    /// gone). `onHangup` runs on the watcher thread, at most once.
    init?(connection handle: SpeechdHandle, onHangup: @escaping @Sendable (String) -> Void) {
        let socket = fcntl(handle.connection.pointee.socket, F_DUPFD_CLOEXEC, 0)
        guard socket >= 0 else { return nil }
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            close(socket)
            return nil
        }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        self.socket = socket
        wakeRead = ends[0]
        wakeWrite = ends[1]
        self.handle = handle
        let thread = Thread { [self] in
            defer { finished.signal() }
            Self.nameCurrentThread()
            watch(onHangup: onHangup)
        }
        thread.start()
    }

    private func watch(onHangup: @Sendable (String) -> Void) {
        var fds = [pollfd(fd: socket, events: Int16(Self.pollRDHUP), revents: 0),
                   pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
        while true {
            fds[0].revents = 0
            fds[1].revents = 0
            let ready = poll(&fds, 2, -1)
            if ready < 0 {
                if errno == EINTR { continue }
                onHangup("cannot watch the speech-dispatcher connection: \(String(cString: strerror(errno)))")
                return
            }
            if fds[1].revents != 0 { return }
            if fds[0].revents != 0 { break }
        }
        let reason = Self.describe(fds[0].revents)
        // libspeechd's event thread reads the same end of file at the same moment; let it finish (it
        // normally has already), bounded, then rescue a caller it may have left waiting.
        var waited = 0
        while !SpeechdConnector.eventThreadEnded(handle.connection), waited < 400 {
            if sleep(milliseconds: 5) { return }
            waited += 1
        }
        let ended = SpeechdConnector.eventThreadEnded(handle.connection)
        if ended { wakeStrandedCaller() }
        onHangup(reason)
        guard ended else { return }
        for delay: Int32 in [10, 100, 1000] {
            if sleep(milliseconds: delay) { return }
            wakeStrandedCaller()
        }
    }

    /// Sleeps on the wake pipe; true when `stop()` was called.
    private func sleep(milliseconds: Int32) -> Bool {
        var fd = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
        return poll(&fd, 1, milliseconds) > 0
    }

    /// libspeechd 0.11's private `struct SPDConnection_threaddata` begins with `pthread_t
    /// events_thread; pthread_cond_t cond_reply_ready; pthread_mutex_t mutex_reply_ready;` (offsets
    /// 0, 8 and 56 on x86-64, as its spd_close shows).
    private func wakeStrandedCaller() {
        let connection = handle.connection
        guard connection.pointee.mode == SPD_MODE_THREADED, let td = connection.pointee.td else { return }
        let base = UnsafeMutableRawPointer(td)
        let condOffset = Self.align(MemoryLayout<pthread_t>.size, to: MemoryLayout<pthread_cond_t>.alignment)
        let mutexOffset = Self.align(condOffset + MemoryLayout<pthread_cond_t>.size,
                                     to: MemoryLayout<pthread_mutex_t>.alignment)
        let cond = (base + condOffset).assumingMemoryBound(to: pthread_cond_t.self)
        let mutex = (base + mutexOffset).assumingMemoryBound(to: pthread_mutex_t.self)
        pthread_mutex_lock(mutex)
        pthread_cond_signal(cond)
        pthread_mutex_unlock(mutex)
    }

    private static func align(_ offset: Int, to alignment: Int) -> Int {
        (offset + alignment - 1) / alignment * alignment
    }

    /// Instant check, used after a failed command to tell a refusal from a dead server.
    var isHungUp: Bool {
        var fd = pollfd(fd: socket, events: Int16(Self.pollRDHUP), revents: 0)
        return poll(&fd, 1, 0) > 0 && fd.revents != 0
    }

    /// Stops the thread (if still running), waits for it, and closes the descriptors. After it returns
    /// the watcher no longer touches the connection.
    func stop() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        // The thread wakes at once; the bound only guards against a wedged kernel call.
        _ = finished.wait(timeout: .now() + 5)
        close(socket)
        close(wakeRead)
        close(wakeWrite)
    }

    /// Shows in /proc/PID/task/*/comm (15 bytes at most).
    static let threadName = "vb-speechd-hup"

    /// pthread_setname_np (a GNU extension Swift's Glibc module does not import), looked up once.
    private static func nameCurrentThread() {
        typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pthread_setname_np") else { return }
        _ = unsafeBitCast(symbol, to: SetName.self)(pthread_self(), threadName)
    }

    /// `POLLRDHUP` is a GNU extension that Swift's Glibc module does not import.
    static let pollRDHUP: Int32 = 0x2000

    private static func describe(_ events: Int16) -> String {
        let events = Int32(events)
        if events & Int32(POLLNVAL) != 0 { return "speech-dispatcher connection closed" }
        if events & Int32(POLLERR) != 0 { return "speech-dispatcher connection failed" }
        return "speech-dispatcher closed the connection"
    }
}
