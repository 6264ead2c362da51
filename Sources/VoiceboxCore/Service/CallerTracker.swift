/// The callers a service is doing something for, watched so that what they leave behind ends
/// when they leave the bus: one watch per caller while it has work, none once it is idle.
///
/// Owned by one actor (the speech or the recognition service), which says when a caller's work
/// starts (`watch`) and when it may be idle (`release`).
struct CallerTracker {
    private let bus: any ServiceBus
    private var watches: [String: UInt64] = [:]

    init(bus: any ServiceBus) {
        self.bus = bus
    }

    /// Starts watching `caller`, once however often it is called. `onLeave` runs once if it leaves
    /// the bus while watched, on the bus's thread: hop to the owner at once.
    mutating func watch(_ caller: String, onLeave: @escaping @Sendable (String) -> Void) {
        guard watches[caller] == nil else { return }
        watches[caller] = bus.watchCaller(caller, onVanish: onLeave)
    }

    /// Stops watching `caller` unless it still has work.
    mutating func release(_ caller: String, stillBusy: Bool) {
        guard !stillBusy, let token = watches.removeValue(forKey: caller) else { return }
        bus.unwatchCaller(token)
    }

    /// The caller has left: its watch is gone with it.
    mutating func left(_ caller: String) {
        watches[caller] = nil
    }

    var watchedCount: Int { watches.count }
}
