import VoiceboxThreads

/// Memory that all of the service's streams draw on, so that many at once cannot add up to
/// much: one budget for what streams keep to hear a cut utterance again (see
/// `RecognitionRun.replaySeconds`; past it an utterance is cut where it is), one for what fast
/// streams read ahead (`RecognitionRun+ReadAhead`; past it a stream is read as it comes).
public final class MemoryBudget: Sendable {
    private let available: Locked<Int>

    /// What a held sample takes: 16-bit audio.
    static let bytesPerSample = MemoryLayout<Int16>.size

    public init(bytes: Int) { available = Locked(bytes) }

    /// A hold on `bytes` of the budget, given back when the hold is released; nil when not
    /// that much is left.
    func hold(_ bytes: Int) -> Hold? {
        let granted = available.withLock { left in
            guard left >= bytes else { return false }
            left -= bytes
            return true
        }
        return granted ? Hold(self, bytes) : nil
    }

    /// A hold on as much of `bytes` as is left, none at all when the budget is spent.
    func hold(upTo bytes: Int) -> Hold {
        let granted = available.withLock { left in
            let granted = max(0, min(left, bytes))
            left -= granted
            return granted
        }
        return Hold(self, granted)
    }

    var availableBytes: Int { available.withLock { $0 } }

    /// Gives its bytes back when it goes, whichever way the stream ends.
    final class Hold: Sendable {
        private let budget: MemoryBudget
        private let held: Locked<Int>

        fileprivate init(_ budget: MemoryBudget, _ bytes: Int) {
            self.budget = budget
            held = Locked(bytes)
        }

        var bytes: Int { held.withLock { $0 } }

        /// Gives back what is held beyond `bytes`.
        func shrink(to bytes: Int) {
            let freed = held.withLock { held in
                let freed = max(0, held - max(0, bytes))
                held -= freed
                return freed
            }
            budget.available.withLock { $0 += freed }
        }

        deinit { shrink(to: 0) }
    }
}
