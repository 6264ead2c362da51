import Dispatch
import Glibc
import VoiceboxCore

/// An SSIP client on one non-blocking socket, driven by readiness (`WatchedSocket`: a read and a
/// write source and one deadline timer on the owner's serial queue). No thread of its own, no
/// polling.
///
/// Commands are pipelined: `send` appends the line to the output, puts the reply handler in a FIFO and
/// returns; speech-dispatcher answers in order, and the reply (or the deadline, or the end of the
/// connection) completes the handler. A SPEAK's text may only follow its `230`, so commands sent after
/// a SPEAK wait here until its text is written.
///
/// Not Sendable: the compiler keeps it in the actor that made it, `SpeechdCore` or an
/// `SSIPConversation` (a voice listing, a health probe), each on a `QueueExecutor` of the queue
/// given here. Readiness only tells that owner (`events`), which enters its isolation and calls
/// `handle`; so every call in here, and every handler it calls back, runs in the owner's isolation.
final class SSIPConnection {
    typealias ReplyHandler = (Result<SSIPReply, SynthesizerError>) -> Void

    private let socket: WatchedSocket
    /// How long speech-dispatcher may take to answer, in seconds (`speechd-reply`, see `Configuration.bounds`).
    let timeout: Double

    private var parser = SSIPParser()
    private var output: [UInt8] = []
    private var pending: [SSIPPendingCommand] = []
    /// Commands sent while a SPEAK waits for its 230: written after its text.
    private var heldBack: [(bytes: [UInt8], pending: SSIPPendingCommand)] = []
    private var awaitingSpeakGo = false
    private var connecting: Bool
    private(set) var isOpen = true
    /// The connection ended because speech-dispatcher left a command unanswered past its deadline
    /// (the server is there but wedged), not because the socket closed.
    private(set) var endedUnanswered = false

    /// Notifications, in stream order with the replies.
    var onEvent: ((SSIPEvent) -> Void)?
    /// The connection ended by itself (closed by the server, timeout, error): called once, after every
    /// pending handler has failed. Not called after `close()`.
    var onClose: ((String) -> Void)?

    /// `events` runs on `queue` at each readiness: it enters the owner, which calls `handle`.
    init(_ opened: SSIPSocket.Opened, queue: DispatchQueue, timeout: Double,
         events: @escaping @Sendable (WatchedSocket.Event) -> Void) {
        socket = WatchedSocket(descriptor: opened.descriptor, queue: queue, events: events)
        connecting = opened.connecting
        self.timeout = timeout
        if connecting { socket.startWriting() }
    }

    deinit {
        // Stops watching (and closes the descriptor) if the owner dropped it open.
        if isOpen { socket.cancel() }
    }

    /// One readiness of the socket, told by the owner from `events`.
    func handle(_ event: WatchedSocket.Event) {
        switch event {
        case .readable: readable()
        case .writable: writable()
        case .deadline: checkDeadlines()
        }
    }

    /// Queues one command line. `text` makes it a SPEAK-like command whose body follows the 230.
    func send(_ line: [UInt8], text: [UInt8]? = nil, inactivityTimeout: Bool = false,
              _ handler: @escaping ReplyHandler) {
        guard isOpen else {
            // At once, from within the call: the owner already learned of the end (onClose or close()).
            handler(.failure(.unavailable("the connection to speech-dispatcher is closed")))
            return
        }
        let entry = SSIPPendingCommand(handler: handler, deadline: .now() + timeout, inactivity: inactivityTimeout, text: text,
                            line: line)
        if awaitingSpeakGo {
            heldBack.append((line, entry))
        } else {
            write(line, entry)
        }
        armTimer()
    }

    /// Ends the connection from our side: no handler or onClose is called any more. `farewell` is
    /// written first if the socket takes it at once (it never waits).
    func close(farewell: [UInt8] = []) {
        guard isOpen else { return }
        if !connecting && !awaitingSpeakGo && output.isEmpty && !farewell.isEmpty {
            _ = farewell.withUnsafeBytes { Glibc.send(socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        }
        isOpen = false
        pending.removeAll()
        heldBack.removeAll()
        onEvent = nil // they usually capture the owner, which holds this connection
        onClose = nil
        socket.cancel()
    }

    // MARK: Writing

    private func write(_ line: [UInt8], _ entry: SSIPPendingCommand) {
        output += line
        pending.append(entry)
        if entry.text != nil { awaitingSpeakGo = true }
        flush()
    }

    private func flush() {
        guard !connecting, isOpen else { return }
        while !output.isEmpty {
            let sent = output.withUnsafeBytes { Glibc.send(socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent > 0 {
                output.removeFirst(sent)
            } else if sent < 0 && errno == EINTR {
                continue
            } else if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                socket.startWriting()
                return
            } else {
                fail("cannot write to speech-dispatcher: \(SSIPSocket.errorText())")
                return
            }
        }
        socket.stopWriting()
    }

    private func writable() {
        guard isOpen else { return }
        if connecting {
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(socket.descriptor, SOL_SOCKET, SO_ERROR, &code, &length)
            guard code == 0 else {
                fail("cannot connect to speech-dispatcher: \(String(cString: strerror(code)))")
                return
            }
            connecting = false
        }
        flush()
    }

    // MARK: Reading

    /// Reads until the socket has nothing more: an end of file that came with the last bytes
    /// raises no second readiness event (seen: a server that wrote half a reply and closed was
    /// noticed only by the 2 s timeout), so it must be found by reading on.
    private func readable() {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while isOpen {
            let count = chunk.withUnsafeMutableBytes { recv(socket.descriptor, $0.baseAddress, $0.count, 0) }
            // A reset (the server died with our command unread) is a close like any other.
            if count < 0 && errno != ECONNRESET {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                fail("cannot read from speech-dispatcher: \(SSIPSocket.errorText())")
                return
            }
            guard count > 0 else {
                fail(parser.isMidMessage || !pending.isEmpty ? "speech-dispatcher closed the connection in the middle of a reply"
                                                             : "speech-dispatcher closed the connection")
                return
            }
            take(chunk[0..<count])
        }
        if isOpen { armTimer() }
    }

    private func take(_ bytes: ArraySlice<UInt8>) {
        for index in pending.indices where pending[index].inactivity {
            pending[index].deadline = .now() + timeout
        }
        let messages: [SSIPMessage]
        do {
            messages = try parser.feed(bytes)
        } catch {
            fail("speech-dispatcher sent something that is not SSIP")
            return
        }
        for message in messages {
            guard isOpen else { return }
            switch message {
            case .event(let event):
                onEvent?(event)
            case .reply(let reply):
                deliver(reply)
            }
        }
    }

    private func deliver(_ reply: SSIPReply) {
        guard !pending.isEmpty else {
            fail("speech-dispatcher answered a command that was not sent (\(reply.code) \(reply.text))")
            return
        }
        if let text = pending[0].text {
            pending[0].text = nil
            awaitingSpeakGo = false
            if reply.code == 230 {
                // Go ahead: the text, then whatever waited behind it. The entry now waits for the 225.
                output += text
                releaseHeldBack()
                flush()
                return
            }
            releaseHeldBack()
            flush()
        }
        let entry = pending.removeFirst()
        entry.handler(.success(reply))
    }

    private func releaseHeldBack() {
        while !heldBack.isEmpty && !awaitingSpeakGo {
            let (bytes, entry) = heldBack.removeFirst()
            output += bytes
            pending.append(entry)
            if entry.text != nil { awaitingSpeakGo = true }
        }
    }

    // MARK: Deadlines and failure

    private func armTimer() {
        let earliest = (pending.map(\.deadline) + heldBack.map(\.pending.deadline)).min()
        socket.schedule(deadline: earliest ?? .distantFuture)
    }

    private func checkDeadlines() {
        guard isOpen else { return }
        // An answer already in the socket is not a late one: this queue may have been the late one
        // (a loaded machine, a sanitizer), so read what is there before judging.
        readable()
        guard isOpen else { return }
        let now = DispatchTime.now()
        if let late = pending.first(where: { $0.deadline <= now }) ?? heldBack.first(where: { $0.pending.deadline <= now })?.pending {
            endedUnanswered = true
            fail("speech-dispatcher did not answer \(SSIPText.commandName(late.line)) within \(SpeechdTimings.text(timeout))")
        } else {
            armTimer()
        }
    }

    private func fail(_ reason: String) {
        guard isOpen else { return }
        isOpen = false
        socket.cancel()
        let waiting = pending.map(\.handler) + heldBack.map(\.pending.handler)
        pending.removeAll()
        heldBack.removeAll()
        for handler in waiting { handler(.failure(.unavailable(reason))) }
        let onClose = self.onClose
        self.onClose = nil
        onEvent = nil
        onClose?(reason)
    }
}
