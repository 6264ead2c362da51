import Dispatch
import Glibc
import VoiceboxContract
import VoiceboxCore

/// A helper process's socket as the actor that owns it sees it: frames written as the socket
/// takes them, frames read as they come, whatever pieces the socket cuts them into
/// (`FrameParser`). Non-blocking and watched on the owner's queue (`WatchedSocket`): no thread
/// waits on it. Its readiness only tells the owner, which enters its isolation with
/// `assumeIsolated` and calls back in here; the timer is the owner's to set (a write deadline, an
/// answer's bound).
///
/// Not Sendable: the compiler keeps it in its actor. Dropped without `close()` (the actor gone),
/// it closes the socket, which ends the helper. Used for voicebox-audio (`AudioHelper.Process`)
/// and the decoder workers (`DecoderWorker`).
final class FramedSocket {
    /// How the other side ended.
    enum End {
        /// It closed its end, or was reset (a process killed with data unread): how the
        /// process ended says why.
        case closed
        /// It broke the protocol: why.
        case broken(String)
    }

    private let socket: WatchedSocket
    private var parser: FrameParser
    /// What one read(2) fills, kept from read to read.
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)
    /// Frames not yet taken by the socket: `output` from `written` on.
    private var output: [UInt8] = []
    private var written = 0
    /// The byte counts of the frames in `output` not yet wholly taken, the head first.
    private var frames: [Int] = []
    /// When the head frame began to be written.
    private(set) var headSince = DispatchTime.now()
    var isOpen: Bool { socket.isWatched }
    /// Whether a frame waits for the socket to take it.
    var isWaitingToWrite: Bool { !frames.isEmpty }

    /// `descriptor` is made non-blocking; `events` is called on `queue` for each readiness.
    init(descriptor: Int32, maximumPayload: Int, queue: DispatchQueue,
         events: @escaping @Sendable (WatchedSocket.Event) -> Void) {
        socket = WatchedSocket(descriptor: descriptor, queue: queue, events: events)
        parser = FrameParser(maximumPayload: maximumPayload)
    }

    deinit {
        if isOpen { close() }
    }

    /// Stops watching; the descriptor is closed once Dispatch lets go of it, and the other side
    /// reads its end then. (Not shut down first: a hang-up of a socket whose sources are being
    /// cancelled is what libdispatch's epoll loop cannot take: docs/architecture.md.)
    func close(then: (@Sendable () -> Void)? = nil) {
        socket.cancel(then: then)
    }

    /// The one deadline (`.distantFuture`: none); `.deadline` comes then.
    func schedule(deadline: DispatchTime) {
        socket.schedule(deadline: deadline)
    }

    /// Reads what the socket has, hands each whole frame to `deliver` (which returns why it is
    /// malformed, nil if it is not), and returns how the other side ended, nil while it is
    /// there. Reads until the socket has nothing more: an end that came with the last bytes
    /// raises no second readiness event.
    func read(_ deliver: (UInt8, [UInt8]) -> String?) -> End? {
        guard isOpen else { return nil }
        switch parser.readAvailable(from: socket.descriptor, using: &chunk, deliver) {
        case nil: return nil
        case .closed: return .closed
        case .failed(let code): return .broken("\(FrameReader.Outcome.failed(code))")
        case .malformed(let why): return .broken("\(FrameReader.Outcome.malformed(why))")
        case .refused(let why): return .broken(why)
        }
    }

    /// Queues `frame` and writes what the socket takes now; false if the socket failed (the
    /// other side is gone). The rest goes as the socket takes it (`flush` on `.writable`).
    func send(_ frame: [UInt8]) -> Bool {
        guard isOpen else { return false }
        if frames.isEmpty { headSince = .now() }
        output += frame
        frames.append(frame.count)
        return flush()
    }

    /// Writes what the socket takes; false if it failed.
    func flush() -> Bool {
        while isOpen && written < output.count {
            let sent = output[written...].withUnsafeBytes {
                Glibc.send(socket.descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if sent >= 0 {
                taken(sent)
                continue
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK:
                socket.startWriting()
                return true
            default:
                socket.stopWriting()  // the other side is gone: its end is read next
                return false
            }
        }
        socket.stopWriting()
        return isOpen
    }

    private func taken(_ count: Int) {
        written += count
        var left = count
        while left > 0, let head = frames.first {
            guard left >= head else {
                frames[0] = head - left
                break
            }
            left -= head
            frames.removeFirst()
            headSince = .now()
        }
        if written == output.count {
            output.removeAll(keepingCapacity: output.count <= 1 << 16)
            written = 0
        }
    }
}
