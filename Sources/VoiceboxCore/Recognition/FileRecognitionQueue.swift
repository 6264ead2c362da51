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
///
/// Streams take turns as files do, but a stream keeps its decoder (and its memory, a model's worth)
/// between its turns while it has audio; it gives it back while its writer is silent (parked,
/// releasing). So at most `streamDecoderLimit` streams hold one, and at most
/// `streamDecodersPerCaller` of one caller's: a stream that needs a decoder waits past that, while
/// files and streams that hold one still take their turns.
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
    let streamDecoderLimit: Int
    let streamDecodersPerCaller: Int

    /// Running files (and streams) and their callers.
    private var runningCallers: [UInt64: String] = [:]
    var running: Set<UInt64> { Set(runningCallers.keys) }
    /// Per caller, its waiting files, oldest first.
    private var waiting: [String: [UInt64]] = [:]
    /// Callers with waiting files, in the order they get the next decoder.
    private var turn: [String] = []

    /// Streams admitted and not finished, with their callers, and those of them that hold a
    /// decoder (from a turn until they end or park releasing it).
    private var streams: [UInt64: String] = [:]
    private var startedStreams: Set<UInt64> = [] {
        didSet {
            for id in startedStreams.subtracting(oldValue) {
                decoderOrder[id] = decodersTaken
                decodersTaken += 1
            }
            for id in oldValue.subtracting(startedStreams) {
                decoderOrder[id] = nil
                tookFrom[id] = nil
            }
        }
    }
    /// In which order the streams that hold a decoder took it: the longest holder is asked first
    /// to cut its utterance for a waiting stream.
    private var decoderOrder: [UInt64: Int] = [:]
    private var decodersTaken = 0
    /// Which stream gave back the decoder a stream holds, when it was given back for it: that one,
    /// waiting again, does not ask for it straight back among equals (`holdersToAsk`).
    private var tookFrom: [UInt64: UInt64] = [:]

    init(runningLimit: Int, waitingLimit: Int, waitingPerCaller: Int, streamDecoderLimit: Int = .max,
         streamDecodersPerCaller: Int = .max) {
        self.runningLimit = max(1, runningLimit)
        self.waitingLimit = max(0, waitingLimit)
        self.waitingPerCaller = max(0, min(waitingPerCaller, waitingLimit))
        self.streamDecoderLimit = max(1, streamDecoderLimit)
        self.streamDecodersPerCaller = max(1, min(streamDecodersPerCaller, streamDecoderLimit))
    }

    /// Whether `id` may take a free decoder: a file, a stream that holds its decoder already, or
    /// a stream that needs one while the limits leave one for it.
    private func canStart(_ id: UInt64) -> Bool {
        guard let caller = streams[id], !startedStreams.contains(id) else { return true }
        return streamCanTakeDecoder(caller: caller)
    }

    private func streamCanTakeDecoder(caller: String) -> Bool {
        startedStreams.count < streamDecoderLimit
            && heldBy(caller) < streamDecodersPerCaller
    }

    /// Whether a waiting file or stream could take a free decoder now.
    private var someoneCanStart: Bool { waiting.values.contains { $0.contains(where: canStart) } }

    private mutating func start(_ id: UInt64, caller: String) {
        runningCallers[id] = caller
        if streams[id] != nil { startedStreams.insert(id) }
    }

    var waitingCount: Int { waiting.values.reduce(0) { $0 + $1.count } }
    /// Streams parked while they wait for their writer, and their callers: they count as waiting
    /// for their caller's share and, for other streams, in all, so that parking never lets a
    /// caller hold more recognitions than the queue's limits allow. A file is not refused for
    /// them: silent streams, however many callers send them, never make another caller's file Busy.
    private var parked: [UInt64: String] = [:]

    func isWaiting(_ id: UInt64) -> Bool { waiting.values.contains { $0.contains(id) } }
    var waitingIDs: Set<UInt64> { Set(waiting.values.joined()) }

    mutating func admit(_ id: UInt64, caller: String, stream: Bool = false) -> Admission {
        // Its streams parked, and those decoding now: a stream parks as soon as it finds its writer
        // silent, so a burst of calls finds the ones before it still decoding, not yet parked.
        let mineParked = parked.values.filter { $0 == caller }.count
            + runningCallers.filter { $0.value == caller && streams[$0.key] != nil }.count
        if mineParked >= waitingPerCaller { return .full(perCaller: true) }
        // Other callers' parked streams never refuse a caller's stream while it has none parked or
        // decoding itself: however many connections one process fills the limit from, another
        // caller still gets its stream (so parked streams are bounded by 64 plus one per connection).
        let othersParkedCount = mineParked == 0 ? 0 : parked.count
        if stream, othersParkedCount >= waitingLimit { return .full(perCaller: false) }
        let startable = !stream || streamCanTakeDecoder(caller: caller)
        if runningCallers.count < runningLimit && !someoneCanStart && startable {
            if stream { streams[id] = caller }
            start(id, caller: caller)
            return .run
        }
        let mine = waiting[caller, default: []]
        guard mine.count + mineParked < waitingPerCaller else { return .full(perCaller: true) }
        let total = waitingCount
        guard total + (stream ? othersParkedCount : 0) < waitingLimit else { return .full(perCaller: false) }
        if stream { streams[id] = caller }
        if mine.isEmpty { turn.append(caller) }
        waiting[caller] = mine + [id]
        return .wait(ahead: total)
    }

    /// A running file or stream ended (or a waiting one was withdrawn first: then no decoder
    /// frees, but a parked stream's end frees its place under `streamDecoderLimit`). Returns the
    /// file or stream that now gets the decoder, if one can.
    mutating func finished(_ id: UInt64) -> UInt64? {
        parked[id] = nil
        streams[id] = nil
        startedStreams.remove(id)  // a stream that ends frees its decoder: a waiting one may start
        if runningCallers.removeValue(forKey: id) == nil { withdraw(id) }
        reserveDecoders()
        return promote()
    }

    /// A running stream gives its turn back while it waits for its writer, or at the end of its
    /// turn; it keeps its decoder. Returns the file or stream that now decodes, if one waits; nil
    /// also when `id` was not running.
    mutating func park(_ id: UInt64) -> UInt64? {
        guard let caller = runningCallers.removeValue(forKey: id) else { return nil }
        parked[id] = caller
        return promote()
    }

    /// A parked stream gave its decoder back too (its writer stayed silent): a stream that
    /// waits for a decoder may take one. Returns that stream, if one now decodes.
    mutating func releaseDecoder(_ id: UInt64) -> UInt64? {
        guard parked[id] != nil, startedStreams.contains(id) else { return nil }
        // It goes to a waiting stream that asked for it: one of a caller that may ask this
        // stream's caller, before one that was waiting only for someone else's.
        let askedBy = Set(blockedStreams.filter { holdersToAsk(for: $0).contains(id) }.map(\.caller))
        startedStreams.remove(id)
        let before = startedStreams
        reserveDecoders(preferring: askedBy)
        for taker in startedStreams.subtracting(before) { tookFrom[taker] = id }
        return promote()
    }

    /// Gives the decoder places that are free to waiting streams that need one: a place a stream
    /// gave back goes to a stream that asked for it (`preferred` callers), even before a core
    /// frees for it, never back to the stream that gave it (which waits for one again); then to
    /// the callers that hold fewest, in turn order.
    /// One place a caller a round: with several places free, a caller with two streams waiting
    /// gets its second only once every caller in turn has had one.
    private mutating func reserveDecoders(preferring preferred: Set<String> = []) {
        var reserved = true
        while reserved {
            reserved = false
            // Callers that asked for the place first, then those that hold fewest; turn order else.
            let order = turn.enumerated().sorted { first, second in
                (preferred.contains(first.element) ? 0 : 1, heldBy(first.element), first.offset)
                    < (preferred.contains(second.element) ? 0 : 1, heldBy(second.element), second.offset)
            }.map(\.element)
            for caller in order where streamCanTakeDecoder(caller: caller) {
                guard startedStreams.count < streamDecoderLimit else { return }
                let needing = (waiting[caller] ?? []).first { streams[$0] != nil && !startedStreams.contains($0) }
                if let id = needing {
                    startedStreams.insert(id)
                    reserved = true
                }
            }
        }
    }

    /// A parked stream has audio again: it decodes now if a decoder is free and nobody waits,
    /// else it waits its caller's turn (past the waiting limits: it was admitted already).
    mutating func resume(_ id: UInt64, caller: String) -> Bool {
        parked[id] = nil
        if runningCallers.count < runningLimit && !someoneCanStart && canStart(id) {
            start(id, caller: caller)
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

    /// The streams that should give their decoders back at their next pause: while a stream
    /// waits that the decoder limits keep from starting (not its own caller's share), the streams
    /// of other callers it may take a decoder from (`holdersToAsk`). Empty when no stream waits so.
    var streamsAskedToYield: Set<UInt64> {
        Set(blockedStreams.flatMap { holdersToAsk(for: $0) })
    }

    /// The streams that should give their decoders back even inside speech if no pause comes
    /// soon (a stream of unbroken speech would otherwise keep it until its 30 s cut): one holder
    /// per waiting stream, of those it may ask, from the caller that holds the most, the longest
    /// holder first. A subset of `streamsAskedToYield`.
    var streamsAskedToCut: Set<UInt64> {
        var asked: Set<UInt64> = []
        for blocked in blockedStreams {
            let longest = holdersToAsk(for: blocked).filter { !asked.contains($0) }.max { first, second in
                (heldBy(streams[first]), -(decoderOrder[first] ?? 0)) < (heldBy(streams[second]), -(decoderOrder[second] ?? 0))
            }
            if let longest { asked.insert(longest) }
        }
        return asked
    }

    /// The holders a waiting stream may ask for a decoder, so that no hand-over leaves the callers
    /// less evenly served: those of callers that hold at least two more decoders than its caller
    /// (the hand-over evens them out); when none does, those of callers that hold one more (a
    /// swap, so that callers take turns), less the one it gave its own decoder to unless that is
    /// the only one (else the two would swap it back and forth at each pause while the others
    /// kept theirs: a second review); never a caller that holds as many or fewer. So a stream
    /// asks nobody while no other caller holds more than its own. (CI saw why: when every
    /// other caller's holder was asked, a third caller's stream, given its only decoder by a cut,
    /// was asked for it back by the stream that was cut while another caller held two.)
    private func holdersToAsk(for blocked: (id: UInt64, caller: String)) -> Set<UInt64> {
        let own = heldBy(blocked.caller)
        let others = startedStreams.filter { streams[$0] != blocked.caller }
        let evening = others.filter { heldBy(streams[$0]) >= own + 2 }
        guard evening.isEmpty else { return evening }
        let swaps = others.filter { heldBy(streams[$0]) == own + 1 }
        let notBack = swaps.filter { tookFrom[$0] != blocked.id }
        return notBack.isEmpty ? swaps : notBack
    }

    /// How many decoders `caller`'s streams hold.
    private func heldBy(_ caller: String?) -> Int {
        startedStreams.filter { streams[$0] == caller }.count
    }

    /// Waiting streams that only the decoder limit keeps from starting (not their caller's
    /// share), in turn order.
    private var blockedStreams: [(id: UInt64, caller: String)] {
        guard startedStreams.count >= streamDecoderLimit else { return [] }
        return turn.flatMap { caller in
            (waiting[caller] ?? []).filter { id in
                streams[id] != nil && !startedStreams.contains(id)
                    && heldBy(caller) < streamDecodersPerCaller
            }.map { (id: $0, caller: caller) }
        }
    }

    private mutating func promote() -> UInt64? {
        guard runningCallers.count < runningLimit else { return nil }
        // The first in turn among the callers that decode least now, of those with a file or
        // stream that can start; its oldest such.
        let candidates = turn.indices.filter { (waiting[turn[$0]] ?? []).contains(where: canStart) }
        let decoding = candidates.map { index in runningCallers.values.filter { $0 == turn[index] }.count }
        guard let best = decoding.indices.min(by: { decoding[$0] < decoding[$1] }) else { return nil }
        let caller = turn.remove(at: candidates[best])
        var ids = waiting[caller] ?? []
        let next = ids.remove(at: ids.firstIndex(where: canStart)!)
        if ids.isEmpty {
            waiting[caller] = nil
        } else {
            waiting[caller] = ids
            turn.append(caller)
        }
        start(next, caller: caller)
        return next
    }
}
