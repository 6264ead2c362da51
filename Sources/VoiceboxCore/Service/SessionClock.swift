/// The audio session's time: the grace before others get their audio back, how soon after a
/// stream starts a change to it is the server's doing. Injected, so that tests move it by hand.
public protocol SessionClock: Sendable {
    /// Time since a fixed origin.
    var now: Duration { get }
    /// Calls `action` once `delay` has passed, unless the timer is cancelled first.
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> SessionTimer
}

/// A scheduled call; cancelling it after it ran does nothing.
public struct SessionTimer: Sendable {
    private let cancelling: @Sendable () -> Void

    public init(cancel: @escaping @Sendable () -> Void) {
        cancelling = cancel
    }

    public func cancel() { cancelling() }
}

/// The real time (ContinuousClock).
public struct SystemSessionClock: SessionClock {
    private let origin = ContinuousClock.now

    public init() {}

    public var now: Duration { ContinuousClock.now - origin }

    public func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> SessionTimer {
        let task = Task {
            do { try await Task.sleep(for: delay) } catch { return }
            action()
        }
        return SessionTimer { task.cancel() }
    }
}
