import Dispatch
import Glibc
import VoiceboxContract
import VoiceboxThreads

/// Reads `WorkerProtocol` messages from a worker's pipe without holding a thread: the pipe is
/// non-blocking, and while it has nothing the reader is a suspended task, woken by a Dispatch read
/// source (`Readiness`) or by its bound. Used from one task at a time (a file's recognition), on
/// that task's executor (`nonisolated(nonsending)`). Closes the pipe when dropped.
final class PipeMessages {
    enum Outcome {
        case message(WorkerProtocol.Tag, [UInt8])
        /// The worker closed its end (it ended) before a whole message came.
        case closed
        /// Nothing whole came within the bound.
        case silent
        /// An unknown tag or a length over the maximum.
        case malformed(String)
        /// read failed (errno).
        case failed(Int32)
    }

    private let descriptor: Int32
    private let readiness: Readiness
    private var parser = FrameParser(maximumPayload: WorkerProtocol.maximumPayload)
    /// What one read(2) fills, kept from read to read.
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)

    /// Takes `descriptor` over (made non-blocking; closed once Dispatch lets go of it).
    init(descriptor: Int32) {
        self.descriptor = descriptor
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        readiness = Readiness(descriptor: descriptor)
    }

    deinit { readiness.cancel() }

    nonisolated(nonsending) func next(within bound: Duration) async -> Outcome {
        let deadline = ContinuousClock.now + bound
        while true {
            switch parser.next() {
            case .frame(let tag, let payload):
                guard let known = WorkerProtocol.Tag(rawValue: tag) else { return .malformed("an unknown message \(tag)") }
                return .message(known, payload)
            case .malformed(let why): return .malformed(why)
            case .partial: break
            }
            let got = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if got > 0 {
                chunk.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
                continue
            }
            if got == 0 { return .closed }
            if errno == EINTR { continue }
            guard errno == EAGAIN || errno == EWOULDBLOCK else { return .failed(errno) }
            let left = deadline - ContinuousClock.now
            guard left > .zero, await readiness.wait(upTo: left) else { return .silent }
        }
    }

    /// A read source that wakes one waiting task when the descriptor has bytes (or its end), or
    /// tells it that its bound passed. Suspended while no one waits, so a readable pipe nobody
    /// reads does not keep firing. Not Sendable: it stays with its reader; its handler and timer
    /// share only the lock-guarded state.
    private final class Readiness {
        private struct State {
            var waiting: CheckedContinuation<Bool, Never>?
            /// Tells a wait's timer from a later wait's.
            var wait: UInt64 = 0
            var suspended = false
            /// A handler already on its way when the source was cancelled must not suspend it:
            /// a suspended source is never released.
            var cancelled = false
        }

        private let source: any DispatchSourceRead
        private let state = Locked(State())

        init(descriptor: Int32) {
            let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: .global())
            let state = state
            source.setEventHandler {
                let waiting = state.withLock { state in
                    if !state.suspended, !state.cancelled {
                        state.suspended = true
                        source.suspend()
                    }
                    return state.waiting.take()
                }
                waiting?.resume(returning: true)
            }
            source.setCancelHandler { _ = Glibc.close(descriptor) }
            self.source = source
            source.activate()
        }

        /// Whether the descriptor became readable within `bound`.
        nonisolated(nonsending) func wait(upTo bound: Duration) async -> Bool {
            await withCheckedContinuation { continuation in
                let wait = state.withLock { state in
                    state.waiting = continuation
                    state.wait &+= 1
                    if state.suspended, !state.cancelled {
                        state.suspended = false
                        source.resume()
                    }
                    return state.wait
                }
                let state = state
                DispatchQueue.global().asyncAfter(deadline: .now() + bound.inSeconds) {
                    state.withLock { $0.wait == wait ? $0.waiting.take() : nil }?.resume(returning: false)
                }
            }
        }

        /// Stops watching; the descriptor is closed once Dispatch lets go of it.
        func cancel() {
            state.withLock { state in
                state.cancelled = true
                if state.suspended {
                    state.suspended = false
                    source.resume()  // a suspended source is never cancelled
                }
                source.cancel()
            }
        }
    }
}
