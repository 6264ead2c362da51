/// The journal's one step, and what it must say.
extension AudioSession {
    /// What the journal must say: this interruption, what a crash left, memory not yet put back.
    func journalEntry(with interruption: OthersInterruption?) -> InterruptionJournal {
        var pending = InterruptionJournal()
        pending.memory = pendingMemory
        let current = interruption?.journal ?? InterruptionJournal()
        return current.merged(with: leftover).merged(with: pending)
    }

    /// The record-or-roll-back step: `change` is kept only if the journal could say so first.
    /// False (and nothing changed) when it could not be written, or no interruption is in progress.
    @discardableResult
    func commit(_ change: (inout OthersInterruption) -> Void) -> Bool {
        guard var next = others else { return false }
        change(&next)
        guard journal.write(journalEntry(with: next)) else { return false }
        others = next
        return true
    }

    /// Writes the journal as the state now is (after something was undone, or dropped).
    func saveJournal() {
        _ = journal.write(journalEntry(with: others))
    }
}
