import Glibc

extension Spawn {
    /// What a child run to its end left.
    public struct Ending: Sendable {
        public var termination: Termination
        /// Its standard output and error, when the spec said `.pipe` (each up to its limit).
        public var output: [UInt8]
        public var error: [UInt8]
        /// It was still running at the deadline and was killed.
        public var timedOut: Bool

        /// Standard error as text, trimmed: a helper program's own complaint.
        public var errorText: String {
            let text = String(decoding: error, as: UTF8.self)
            return String(text.drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
        }
    }

    /// Runs `spec` to its end, bounded by `timeout`: writes `input` to its standard input (which
    /// must then be `.pipe`; nil input with `.pipe` gives it an empty one), reads its output and
    /// error where they are `.pipe`, and reaps it. At the deadline it is killed (SIGKILL).
    ///
    /// Its output is read until the child exits, then what is left in the pipes: a program that
    /// forks into the background (xclip, speech-dispatcher's launcher) and leaves a grandchild
    /// holding the pipe open does not hold the caller up. Past `outputLimit` / `errorLimit` bytes
    /// the rest is read and dropped, so the child never blocks on a full pipe. With
    /// `untilPipesClose` the pipes are read to their end as well (GLib's g_spawn_sync does so: a
    /// launcher whose daemon closes them when it is ready), still within `timeout`.
    public static func run(_ spec: ChildSpec, input: [UInt8]? = nil, timeout: Duration, untilPipesClose: Bool = false,
                           outputLimit: Int = 64 << 20, errorLimit: Int = 64 << 10) throws(SpawnError) -> Ending {
        var spec = spec
        if input != nil { spec.standardInput = .pipe }
        let deadline = ContinuousClock.now + timeout
        let started = try start(spec)
        let child = started.child

        var writer = started.input ?? -1
        var pending = input.map { $0[...] } ?? []
        if writer >= 0 {
            _ = fcntl(writer, F_SETFL, fcntl(writer, F_GETFL) | O_NONBLOCK)
            if pending.isEmpty { close(writer); writer = -1 }
        }
        var readers: [Reader] = []
        if let output = started.output { readers.append(Reader(fd: output, limit: outputLimit)) }
        if let error = started.error { readers.append(Reader(fd: error, limit: errorLimit)) }
        defer {
            if writer >= 0 { close(writer) }
            readers.forEach { $0.close() }
        }

        var timedOut = false
        var termination: Termination?
        while termination == nil || (untilPipesClose && readers.contains(where: \.isOpen)) {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { timedOut = true; break }
            let open = readers.filter(\.isOpen)
            var fds = open.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            if writer >= 0 { fds.append(pollfd(fd: writer, events: Int16(POLLOUT), revents: 0)) }
            // Woken by output, room for input, or (every 10 ms at most) to see whether it has exited.
            let ready = poll(&fds, nfds_t(fds.count), min(10, Child.milliseconds(left)))
            if ready > 0 {
                for (index, entry) in fds.enumerated() where entry.revents != 0 {
                    if index < open.count {
                        open[index].drain()
                    } else {
                        let written = writeWithoutSIGPIPE(writer, pending)
                        if written > 0 { pending = pending.dropFirst(written) }
                        if pending.isEmpty || (written < 0 && errno != EAGAIN && errno != EINTR) {
                            close(writer)
                            writer = -1
                        }
                    }
                }
            }
            if termination == nil { termination = child.termination }
        }
        if timedOut {
            termination = child.end(within: .zero).termination
        }
        // What it wrote before it ended is in the pipes now.
        readers.forEach { $0.drain() }
        let output = started.output == nil ? [] : readers[0].bytes
        let error = started.error == nil ? [] : readers[readers.count - 1].bytes
        return Ending(termination: termination ?? .unknown, output: output, error: error, timedOut: timedOut)
    }
}

/// One pipe a child writes into, read without blocking, up to a limit.
private final class Reader {
    let fd: Int32
    let limit: Int
    private(set) var bytes: [UInt8] = []
    private(set) var isOpen = true

    init(fd: Int32, limit: Int) {
        self.fd = fd
        self.limit = limit
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    }

    /// Reads what the pipe holds now; at its end (or on an error) it is done with.
    func drain() {
        guard isOpen else { return }
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count > 0 {
                bytes.append(contentsOf: chunk[0..<min(count, max(0, limit - bytes.count))])
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count == 0 || errno != EAGAIN { close() }
            return
        }
    }

    func close() {
        guard isOpen else { return }
        isOpen = false
        _ = Glibc.close(fd)
    }
}
