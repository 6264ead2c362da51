import VoiceboxThreads

/// How much audio all of the service's streams may keep to hear an utterance again (see
/// `RecognitionRun.replaySeconds`): a cut stream keeps its utterance until its next decoder
/// has heard it, and many streams waiting at once must not add up to much memory. Past the
/// budget a stream's utterance is cut where it is, as before replays.
public final class ReplayBudget: Sendable {
    private let available: Locked<Int>

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

    var availableBytes: Int { available.withLock { $0 } }

    /// Gives its bytes back when it goes, whichever way the stream ends.
    final class Hold: Sendable {
        private let budget: ReplayBudget
        private let bytes: Int

        fileprivate init(_ budget: ReplayBudget, _ bytes: Int) {
            self.budget = budget
            self.bytes = bytes
        }

        deinit { budget.available.withLock { $0 += bytes } }
    }
}
