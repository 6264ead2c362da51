/// How long the mixer waits before each attempt to reach a server that is not there:
/// 0.25 s, doubling, at most 10 s; back to the start once a connection was ready.
///
/// Retries are single timers, not polling: a server that stays away costs one connection
/// attempt every 10 s.
struct ReconnectBackoff: Sendable {
    static let first = Duration.milliseconds(250)
    static let limit = Duration.seconds(10)

    private(set) var next = Self.first

    /// The delay before the coming attempt; the one after it doubles.
    mutating func take() -> Duration {
        let delay = next
        next = min(next * 2, Self.limit)
        return delay
    }

    mutating func reset() { next = Self.first }
}
