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
        // spd_open2 only spawns a server when `autospawn` is non-zero.
        guard let connection = spd_open2(clientName, connectionName, nil, mode, cAddress,
                                         autospawn ? 1 : 0, &error) else {
            return .failure(.unavailable(takeError(&error) ?? "cannot connect to speech-dispatcher"))
        }
        if error != nil { free(error) }
        return .success(SpeechdHandle(connection: connection))
    }

    private static func takeError(_ error: inout UnsafeMutablePointer<CChar>?) -> String? {
        guard let pointer = error else { return nil }
        defer { free(pointer); error = nil }
        return String(cString: pointer)
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
            watch(onHangup: onHangup)
        }
        thread.name = "voicebox-speechd-hangup"
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

    /// `POLLRDHUP` is a GNU extension that Swift's Glibc module does not import.
    static let pollRDHUP: Int32 = 0x2000

    private static func describe(_ events: Int16) -> String {
        let events = Int32(events)
        if events & Int32(POLLNVAL) != 0 { return "speech-dispatcher connection closed" }
        if events & Int32(POLLERR) != 0 { return "speech-dispatcher connection failed" }
        return "speech-dispatcher closed the connection"
    }
}
