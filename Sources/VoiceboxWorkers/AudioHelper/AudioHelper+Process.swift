import Dispatch
import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxSpawn

extension AudioHelper {
    /// One running helper: the process and the service's end of its socket, non-blocking, watched
    /// by a read and a write Dispatch source and a write-deadline timer on the actor's queue. No
    /// thread waits on it: the read source's handler takes what the socket has and cuts it into
    /// frames; requests go into an output buffer written as the socket takes them.
    ///
    /// Not Sendable: the compiler keeps it in the actor. Its sources fire on the actor's queue and
    /// only tell the actor (`Event`, with the process's generation), which enters its isolation
    /// with `assumeIsolated` and calls back in here. Dropped without `close()` (the actor gone), it
    /// closes its socket, which ends the helper.
    final class Process {
        enum Event: Sendable {
            /// The socket has bytes, or its end.
            case readable
            /// The socket takes bytes again.
            case writable
            /// The frame being written has been at it for helper-write.
            case writeDeadline
        }

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
        private let socket: Int32
        /// How long the frame at the head of the output may take to be taken (helper-write).
        private let writeBound: Duration
        private let readSource: any DispatchSourceRead
        private let writeSource: any DispatchSourceWrite
        private let writeTimer: any DispatchSourceTimer

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
        private var writing = false
        private(set) var isOpen = true

        /// `socket` is made non-blocking; `events` is called on `queue` for each readiness.
        init(child: Child, socket: Int32, generation: UInt64, queue: DispatchQueue, writeBound: Duration,
             events: @escaping @Sendable (Event) -> Void) {
            self.child = child
            self.socket = socket
            self.generation = generation
            self.writeBound = writeBound
            _ = fcntl(socket, F_SETFL, fcntl(socket, F_GETFL) | O_NONBLOCK)
            readSource = DispatchSource.makeReadSource(fileDescriptor: socket, queue: queue)
            writeSource = DispatchSource.makeWriteSource(fileDescriptor: socket, queue: queue)
            writeTimer = DispatchSource.makeTimerSource(queue: queue)
            // Dispatch wants the descriptor open until both of its sources are cancelled.
            let bothCancelled = DispatchGroup()
            bothCancelled.enter()
            bothCancelled.enter()
            readSource.setCancelHandler { bothCancelled.leave() }
            writeSource.setCancelHandler { bothCancelled.leave() }
            bothCancelled.notify(queue: queue) { _ = Glibc.close(socket) }
            readSource.setEventHandler { events(.readable) }
            writeSource.setEventHandler { events(.writable) }
            writeTimer.setEventHandler { events(.writeDeadline) }
            writeTimer.schedule(deadline: .distantFuture)
            readSource.activate()
            writeTimer.activate()
        }

        deinit {
            if isOpen { close() }
        }

        /// Hangs up (the helper reads the end and exits) and stops watching; the descriptor is
        /// closed once Dispatch lets go of it.
        func close() {
            guard isOpen else { return }
            isOpen = false
            Glibc.shutdown(socket, Int32(SHUT_RDWR))
            writeTimer.cancel()
            readSource.cancel()
            writeSource.cancel()
            if !writing {
                writing = true
                writeSource.resume()  // a suspended source never runs its cancel handler
            }
        }

        // MARK: Reading

        /// Reads what the socket has, hands each whole frame to `deliver` (which returns why it is
        /// malformed, nil if it is not), and returns how the helper's side ended, nil while it is
        /// there. Reads until the socket has nothing more: an end that came with the last bytes
        /// raises no second readiness event.
        func read(_ deliver: (UInt8, [UInt8]) -> String?) -> End? {
            while isOpen {
                let got = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
                if got < 0 {
                    switch errno {
                    case EINTR: continue
                    case EAGAIN, EWOULDBLOCK: return nil
                    case ECONNRESET: return .closed
                    case let code: return .broken("\(FrameReader.Outcome.failed(code))")
                    }
                }
                if got == 0 { return .closed }
                chunk.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
                frames: while true {
                    switch parser.next() {
                    case .frame(let tag, let payload):
                        if let why = deliver(tag, payload) { return .broken(why) }
                    case .malformed(let why):
                        return .broken("\(FrameReader.Outcome.malformed(why))")
                    case .partial:
                        break frames
                    }
                }
            }
            return nil
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
                    Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
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
            writeTimer.schedule(deadline: frames.isEmpty ? .distantFuture : headSince + writeBound.inSeconds)
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

        private func startWriting() {
            guard !writing else { return }
            writing = true
            armWriteTimer()
            writeSource.resume()
        }

        private func stopWriting() {
            guard writing, isOpen else { return }
            writing = false
            writeTimer.schedule(deadline: .distantFuture)
            writeSource.suspend()
        }
    }
}
