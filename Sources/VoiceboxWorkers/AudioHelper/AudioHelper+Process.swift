import Dispatch
import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxSpawn

extension AudioHelper {
    /// One running helper: the process and the service's end of its socket, non-blocking, watched
    /// on the actor's queue (`WatchedSocket`: a read and a write source, and its timer as the
    /// write deadline). No thread waits on it: a readable socket's bytes are cut into frames;
    /// requests go into an output buffer written as the socket takes them.
    ///
    /// Not Sendable: the compiler keeps it in the actor. Its readiness only tells the actor
    /// (`WatchedSocket.Event`, with the process's generation), which enters its isolation with
    /// `assumeIsolated` and calls back in here. Dropped without `close()` (the actor gone), it
    /// closes its socket, which ends the helper.
    final class Process {
        /// How the helper's side of the socket ended.
        enum End {
            /// It closed its end, or was reset (a helper killed with data unread): how it ended
            /// (its termination) says why.
            case closed
            /// It broke the protocol: why.
            case broken(String)
        }

        let child: Child
        let generation: UInt64
        let started = ContinuousClock.now
        private let socket: WatchedSocket
        /// How long the frame at the head of the output may take to be taken (helper-write).
        private let writeBound: Duration

        private var parser = FrameParser(maximumPayload: AudioHelperProtocol.maximumPayload)
        /// What one read(2) fills, kept from read to read.
        private var chunk = [UInt8](repeating: 0, count: 1 << 16)
        /// Requests not yet taken by the socket: `output` from `written` on, frame by frame.
        private var output: [UInt8] = []
        private var written = 0
        /// The byte counts of the frames in `output` not yet wholly taken, the head first.
        private var frames: [Int] = []
        /// When the head frame began to be written (helper-write runs from there).
        private var headSince = DispatchTime.now()
        var isOpen: Bool { socket.isWatched }

        /// `socket` is made non-blocking; `events` is called on `queue` for each readiness (its
        /// `.deadline`: the head frame's write deadline).
        init(child: Child, socket: Int32, generation: UInt64, queue: DispatchQueue, writeBound: Duration,
             events: @escaping @Sendable (WatchedSocket.Event) -> Void) {
            self.child = child
            self.socket = WatchedSocket(descriptor: socket, queue: queue, events: events)
            self.generation = generation
            self.writeBound = writeBound
        }

        deinit {
            if isOpen { close() }
        }

        /// Hangs up (the helper reads the end and exits) and stops watching; the descriptor is
        /// closed once Dispatch lets go of it.
        func close() {
            guard isOpen else { return }
            Glibc.shutdown(socket.descriptor, Int32(SHUT_RDWR))
            socket.cancel()
        }

        // MARK: Reading

        /// Reads what the socket has, hands each whole frame to `deliver` (which returns why it is
        /// malformed, nil if it is not), and returns how the helper's side ended, nil while it is
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

        // MARK: Writing

        /// Queues `frame` and writes what the socket takes now; false if the socket failed (the
        /// helper is gone). The rest goes as the socket takes it.
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
                    startWriting()
                    return true
                default:
                    stopWriting()  // the helper is gone: its end is read next
                    return false
                }
            }
            stopWriting()
            return isOpen
        }

        /// Whether the frame at the head of the output has waited helper-write to be taken.
        var writeIsLate: Bool {
            !frames.isEmpty && DispatchTime.now() >= headSince + writeBound.inSeconds
        }

        /// Sets the timer to the head frame's deadline again (after one that was not late).
        func armWriteTimer() {
            socket.schedule(deadline: frames.isEmpty ? .distantFuture : headSince + writeBound.inSeconds)
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

        /// Asks for `.writable` while output waits, with the head frame's deadline, set when the
        /// waiting begins (a deadline found not late sets it again, `armWriteTimer`; one found
        /// late kills the helper and is not set again).
        private func startWriting() {
            if socket.startWriting() { armWriteTimer() }
        }

        private func stopWriting() {
            socket.schedule(deadline: .distantFuture)
            socket.stopWriting()
        }
    }
}
