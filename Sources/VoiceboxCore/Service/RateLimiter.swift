/// Lets an event through at most once per `interval`: signals such as AudioLevel and
/// RecognitionPartial come from every chunk of audio, far more often than anyone can use.
/// Pure: the caller passes the time, so tests need no clock.
struct RateLimiter: Sendable {
    let interval: Duration
    private var last: ContinuousClock.Instant?

    init(perSecond: Int) {
        interval = .seconds(1) / perSecond
    }

    /// Whether an event at `now` may go out; if so it counts as the latest.
    mutating func allow(at now: ContinuousClock.Instant) -> Bool {
        if let last, now - last < interval { return false }
        last = now
        return true
    }
}
