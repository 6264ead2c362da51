import Dispatch
import Glibc
import VoiceboxThreads

/// A non-blocking socket watched on its owner's serial queue: a read source, a write source that
/// runs only while output waits (`startWriting`), and one deadline timer. Each readiness goes to
/// `events`, a Sendable closure that cannot hold the socket: it enters the owner's isolation (an
/// actor on a `QueueExecutor` of the same queue, with `assumeIsolated`), which calls back in here.
/// So the owner's code, never a Dispatch handler, reads and writes the socket, and the compiler
/// keeps this non-Sendable object in the owner. The client of voicebox-audio (`AudioHelper`) and
/// speech-dispatcher's connections (`SSIPConnection`) are built on it.
///
/// Dispatch wants the descriptor open until both of its sources are cancelled: `cancel()` closes
/// it after that. Dropped without `cancel()` (its owner gone), it cancels itself.
public final class WatchedSocket {
    public enum Event: Sendable {
        /// The socket has bytes, or its end.
        case readable
        /// The socket takes bytes again (or a non-blocking connect finished).
        case writable
        /// The deadline set with `schedule(deadline:)` has come.
        case deadline
    }

    public let descriptor: Int32
    private let readSource: any DispatchSourceRead
    private let writeSource: any DispatchSourceWrite
    private let timer: any DispatchSourceTimer
    private var writing = false
    public private(set) var isWatched = true
    /// Run once Dispatch has let go of the descriptor (and closed it): `cancel(then:)`.
    private let afterClose = Locked<(@Sendable () -> Void)?>(nil)

    /// Watches `descriptor` (made non-blocking here) on `queue`; `events` runs there.
    public init(descriptor: Int32, queue: DispatchQueue, events: @escaping @Sendable (Event) -> Void) {
        self.descriptor = descriptor
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
        readSource = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        writeSource = DispatchSource.makeWriteSource(fileDescriptor: descriptor, queue: queue)
        timer = DispatchSource.makeTimerSource(queue: queue)
        let bothCancelled = DispatchGroup()
        bothCancelled.enter()
        bothCancelled.enter()
        readSource.setCancelHandler { bothCancelled.leave() }
        writeSource.setCancelHandler { bothCancelled.leave() }
        let afterClose = afterClose
        bothCancelled.notify(queue: queue) {
            _ = Glibc.close(descriptor)
            afterClose.withLock { $0.take() }?()
        }
        readSource.setEventHandler { events(.readable) }
        writeSource.setEventHandler { events(.writable) }
        timer.setEventHandler { events(.deadline) }
        timer.schedule(deadline: .distantFuture)
        readSource.activate()
        timer.activate()
    }

    deinit {
        if isWatched { cancel() }
    }

    /// Asks for `.writable` until `stopWriting`; returns whether it was not asked already.
    @discardableResult
    public func startWriting() -> Bool {
        guard isWatched, !writing else { return false }
        writing = true
        writeSource.resume()
        return true
    }

    public func stopWriting() {
        guard isWatched, writing else { return }
        writing = false
        writeSource.suspend()
    }

    /// The one deadline (`.distantFuture`: none).
    public func schedule(deadline: DispatchTime) {
        guard isWatched else { return }
        timer.schedule(deadline: deadline)
    }

    /// Stops watching; the descriptor is closed once Dispatch lets go of it, and then `then` runs:
    /// a peer is ended there, not before (a hang-up that meets sources being cancelled is what
    /// libdispatch's epoll loop cannot take: docs/architecture.md). No event comes after this
    /// returns (the owner's queue runs this, and the handlers on it are cancelled).
    public func cancel(then: (@Sendable () -> Void)? = nil) {
        guard isWatched else {
            then?()
            return
        }
        afterClose.withLock { $0 = then }
        isWatched = false
        timer.cancel()
        readSource.cancel()
        writeSource.cancel()
        if !writing {
            writing = true
            writeSource.resume()  // a suspended source never runs its cancel handler
        }
    }
}
