/// The interruption journal's one writing step. Every change to others is written down before it is
/// made; a change that cannot be written down (a full `$XDG_RUNTIME_DIR`) is not made, since a crash
/// would leave it for good. A failing journal is reported once per spell, not once per change.
struct JournalKeeper: Sendable {
    let store: any JournalStore
    let log: @Sendable (String) -> Void
    private var failing = false

    init(store: any JournalStore, log: @escaping @Sendable (String) -> Void) {
        self.store = store
        self.log = log
    }

    /// Makes the journal say `entry` (nothing when it is empty); false when it cannot be written.
    mutating func write(_ entry: InterruptionJournal) -> Bool {
        guard !entry.isEmpty else {
            store.clear()
            failing = false
            return true
        }
        do {
            try store.save(entry)
            failing = false
            return true
        } catch {
            if !failing {
                log("cannot write the interruption journal (\(error)): other audio is left as it is until it can be written")
            }
            failing = true
            return false
        }
    }
}

extension InterruptionJournal {
    /// Several journals as one: `self` first. A memory entry kept twice keeps its first (older) state.
    func merged(with other: InterruptionJournal?) -> InterruptionJournal {
        guard let other else { return self }
        var entry = self
        entry.reason = reason ?? other.reason
        entry.id = id ?? other.id
        entry.muted += other.muted
        entry.ducked += other.ducked
        entry.players += other.players
        for record in other.memory where !entry.memory.contains(where: { $0.name == record.name }) { entry.memory.append(record) }
        return entry
    }
}
