/// Which file recognitions decode now and which wait for a decoder, served round-robin by caller.
///
/// Decoding a file keeps a core busy, so at most `running` decode at once. The rest wait: each
/// time a decoder frees, the next caller in turn gets it (its oldest waiting file), and that caller
/// goes to the back of the turn; a caller that decodes less at that moment comes before one that
/// decodes more. So a caller that queued twenty files delays another caller's one file by at most
/// one file per caller ahead of it, never by its whole batch.
///
/// The wait is bounded: at most `waitingLimit` files wait in all and `waitingPerCaller` per caller;
/// past either, admission fails (Busy), so that no caller waits behind an unbounded queue.
struct FileRecognitionQueue: Sendable {
    enum Admission: Equatable, Sendable {
        /// A decoder is free: decode now.
        case run
        /// Waits; `ahead` files will get a decoder first if nobody else arrives.
        case wait(ahead: Int)
        /// The queue (`total`) or the caller's share of it (`perCaller`) is full.
        case full(perCaller: Bool)
    }

    let runningLimit: Int
    let waitingLimit: Int
    let waitingPerCaller: Int

    /// Running files (and streams) and their callers.
    private var runningCallers: [UInt64: String] = [:]
    var running: Set<UInt64> { Set(runningCallers.keys) }
    /// Per caller, its waiting files, oldest first.
    private var waiting: [String: [UInt64]] = [:]
    /// Callers with waiting files, in the order they get the next decoder.
    private var turn: [String] = []

    init(runningLimit: Int, waitingLimit: Int, waitingPerCaller: Int) {
        self.runningLimit = max(1, runningLimit)
        self.waitingLimit = max(0, waitingLimit)
        self.waitingPerCaller = max(0, min(waitingPerCaller, waitingLimit))
    }

    var waitingCount: Int { waiting.values.reduce(0) { $0 + $1.count } }
    /// Streams that gave their decoder back while they wait for their writer, and their callers:
    /// they count as waiting, so that parking never lets a caller hold more recognitions (and
    /// their decoders' memory) than the queue's limits allow.
    private var parked: [UInt64: String] = [:]

    func isWaiting(_ id: UInt64) -> Bool { waiting.values.contains { $0.contains(id) } }

    mutating func admit(_ id: UInt64, caller: String) -> Admission {
        let mineParked = parked.values.filter { $0 == caller }.count
        if mineParked >= waitingPerCaller { return .full(perCaller: true) }
        if parked.count >= waitingLimit { return .full(perCaller: false) }
        if runningCallers.count < runningLimit && turn.isEmpty {
            runningCallers[id] = caller
            return .run
        }
        let mine = waiting[caller, default: []]
        guard mine.count + mineParked < waitingPerCaller else { return .full(perCaller: true) }
        let total = waitingCount
        guard total + parked.count < waitingLimit else { return .full(perCaller: false) }
        if mine.isEmpty { turn.append(caller) }
        waiting[caller] = mine + [id]
        return .wait(ahead: total)
    }

    /// A running file ended (or a waiting one was withdrawn first: then nothing frees). Returns
    /// the file that now gets the decoder, if one waits.
    mutating func finished(_ id: UInt64) -> UInt64? {
        parked[id] = nil
        guard runningCallers.removeValue(forKey: id) != nil else {
            withdraw(id)
            return nil
        }
        return promote()
    }

    /// A running stream gives its decoder back while it waits for its writer. Returns the file
    /// that now gets the decoder, if one waits; nil also when `id` was not running.
    mutating func park(_ id: UInt64) -> UInt64? {
        guard let caller = runningCallers.removeValue(forKey: id) else { return nil }
        parked[id] = caller
        return promote()
    }

    /// A parked stream has audio again: it decodes now if a decoder is free and nobody waits,
    /// else it waits its caller's turn (past the waiting limits: it was admitted already).
    mutating func resume(_ id: UInt64, caller: String) -> Bool {
        parked[id] = nil
        if runningCallers.count < runningLimit && turn.isEmpty {
            runningCallers[id] = caller
            return true
        }
        let mine = waiting[caller, default: []]
        if mine.isEmpty { turn.append(caller) }
        waiting[caller] = mine + [id]
        return false
    }

    func isRunning(_ id: UInt64) -> Bool { runningCallers[id] != nil }

    /// Takes a waiting file out of the queue (stopped, cancelled, its caller gone). False if it
    /// was not waiting.
    @discardableResult
    mutating func withdraw(_ id: UInt64) -> Bool {
        guard let (caller, ids) = waiting.first(where: { $0.value.contains(id) }) else { return false }
        let rest = ids.filter { $0 != id }
        waiting[caller] = rest.isEmpty ? nil : rest
        if rest.isEmpty { turn.removeAll { $0 == caller } }
        return true
    }

    private mutating func promote() -> UInt64? {
        guard runningCallers.count < runningLimit, !turn.isEmpty else { return nil }
        // The first in turn among the callers that decode least now.
        let decoding = turn.map { caller in runningCallers.values.filter { $0 == caller }.count }
        let index = decoding.indices.min { decoding[$0] < decoding[$1] }!
        let caller = turn.remove(at: index)
        var ids = waiting[caller] ?? []
        let next = ids.removeFirst()
        if ids.isEmpty {
            waiting[caller] = nil
        } else {
            waiting[caller] = ids
            turn.append(caller)
        }
        runningCallers[next] = caller
        return next
    }
}
