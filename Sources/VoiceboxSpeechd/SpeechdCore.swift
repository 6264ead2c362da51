import Dispatch
import VoiceboxContract
import VoiceboxCore

/// Everything mutable of one synthesizer: an actor whose executor is its serial queue, so its state
/// is checked by the compiler. The SSIP connection's readiness handlers and timers fire on that
/// same queue and reach the state with `assumeIsolated` (checked at run time by the executor); the
/// blocking socket opening runs on `connector` and hands its result back onto the queue.
///
/// Nothing here ever waits on speech-dispatcher: commands are queued on the connection and their
/// replies come back as handlers on `queue`, each bounded by `timings.reply`. Every wait and delay
/// is one of `timings` (the configuration's bounds).
actor SpeechdCore {
    typealias Configuration = SpeechDispatcherSynthesizer.Configuration

    nonisolated let queue: DispatchQueue
    private nonisolated let executor: QueueExecutor
    nonisolated let connector = DispatchQueue(label: "voicebox.speechd.connector")
    nonisolated let configuration: Configuration
    nonisolated let timings: SpeechdTimings
    nonisolated let continuation: AsyncStream<SynthesisEvent>.Continuation

    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    // MARK: State (only on `queue`)

    /// The live speaking connection and what was recorded when it was set up.
    struct Link {
        let connection: SSIPConnection
        let generation: UInt64
        let defaultModule: String?
        let defaultLanguage: String?
        let defaultVolume: Int?
    }

    enum Phase {
        /// The first connection attempt has not finished: speak() waits for it.
        case starting
        case connected(Link)
        /// The connection was lost or speech-dispatcher stopped speaking, and it is being brought
        /// back (SpeechdCore+Recovery): speak() queues here, and what was queued is given again after.
        case recovering(Recovery)
        case disconnected(reason: String)
        case shutDown
    }

    enum Stage {
        /// Only here (paused): not given to speech-dispatcher yet, or taken back from it by pause().
        case held
        /// Waiting for its turn, or its settings and SPEAK are on the way (see `Submission`).
        case submitting(token: UInt64)
        /// Given to speech-dispatcher, which has not begun it.
        case queued(messageID: Int)
        /// speech-dispatcher reported its begin.
        case speaking(messageID: Int)

        var messageID: Int? {
            switch self {
            case .held, .submitting: nil
            case .queued(let id), .speaking(let id): id
            }
        }
    }

    struct Utterance {
        let request: SynthesisRequest
        let sequence: UInt64
        var stage: Stage
        var started = false
        /// Recoveries that found it first in speech-dispatcher's queue, not begun (SpeechdCore+Recovery).
        var recoveries = 0
    }

    /// What a speech-dispatcher message id stands for.
    enum Track {
        /// One of our utterances, still waiting for its end.
        case live(UInt64)
        /// A message whose utterance has already been finished (stopped or paused): its remaining
        /// notices are swallowed. `stopOnBegin`: it was stopped while queued in speech-dispatcher, which
        /// cannot drop a queued message (`STOP`/`CANCEL <id>` answer OK and change nothing, measured
        /// with 0.11.4), so it gets `STOP SELF` as soon as it begins.
        case ghost(stopOnBegin: Bool)
    }

    var phase: Phase = .starting
    var utterances: [UInt64: Utterance] = [:]
    var tracks: [Int: Track] = [:]
    var nextSequence: UInt64 = 0
    var paused = false
    /// speak() calls made while the first connection attempt runs.
    var parked: [(request: SynthesisRequest, waiter: CheckedContinuation<Void, any Error>)] = []
    /// Utterances to give to speech-dispatcher, one at a time (settings are sticky per connection).
    var submissions: [Submission] = []
    var activeSubmission: Submission?
    var nextToken: UInt64 = 0
    /// Submissions whose SPEAK was sent but whose utterance was stopped or paused before the 225
    /// came: how to track the message once its id is known.
    var orphans: [UInt64: Track] = [:]
    /// Notices for an unknown message that came while a SPEAK waits for its 225: speech-dispatcher
    /// sends the CANCEL of a notification it drops at once before the 225 (measured with 0.11.4), so
    /// they may be about that message; replayed once its id is known.
    var early: [SSIPEvent] = []

    var generation: UInt64 = 0
    /// What the attempt in progress has been told in its handshake so far.
    struct HandshakeAnswers {
        var values: [String: String] = [:]
        var refusal: String?
    }
    var handshakeAnswers = HandshakeAnswers()
    /// The connection of the attempt in progress (handshake not done yet).
    var attempt: SSIPConnection?
    var attemptInFlight = false
    var lastAttemptStart: DispatchTime?
    var retry: DispatchWorkItem?
    /// The next heartbeat (SpeechdCore+Heartbeat), while something is in the engine.
    var heartbeat: DispatchWorkItem?
    /// Delay before the next reconnection attempt: `reconnectFirst` doubling up to `reconnectLimit`,
    /// reset on success.
    var backoff: Double
    /// The message speech-dispatcher is speaking now (ours or one we gave up), from its BEGIN to its
    /// END or CANCEL: while it runs, the next of ours is not expected to begin.
    var speakingMessage: Int?
    /// The stall check of the utterance due to begin (SpeechdCore+Watchdog), and how long it waits.
    var stallCheck: DispatchWorkItem?
    var stallDeadline: DispatchTime?
    var stallWait: Double
    /// A probe is out; and whether progress came since it went (then it cannot be a wedge).
    var stallProbing = false
    var stallProgress = false
    /// When speech-dispatcher was last restarted, and how long to wait before the next restart
    /// (both forgotten once it speaks again: see noteProgress).
    var lastRestart: DispatchTime?
    /// A server we stopped whose relaunch failed: started again before each connection attempt
    /// (they follow the backoff) until one connects, so speech does not stay down for good.
    var unstarted: SpeechdServerProcess?
    /// The server behind the last connection (found as its socket opens, only with autospawn): one
    /// that goes away is started again with its own command line, which works where `--spawn` is
    /// refused (a configuration naming another socket). nil when it runs as another user.
    var knownServer: SpeechdServerProcess?
    var restartBackoff: Double

    init(configuration: Configuration, timings: SpeechdTimings, continuation: AsyncStream<SynthesisEvent>.Continuation) {
        executor = QueueExecutor(queue: DispatchQueue(label: "voicebox.speechd.owner"))
        queue = executor.queue
        self.configuration = configuration
        self.timings = timings
        self.continuation = continuation
        backoff = timings.reconnectFirst
        stallWait = timings.begin
        restartBackoff = timings.restartFirst
        queue.async { self.assumeIsolated { $0.attemptConnect() } }
    }

    /// Runs `work` on the actor from a Dispatch handler or timer: it must already be on `queue`.
    nonisolated func onQueue(_ work: (isolated SpeechdCore) -> Void) {
        assumeIsolated(work)
    }

    // MARK: Entry points (any thread)

    /// Waits only for speech-dispatcher's 225, at most `timings.accept` (SpeechdCore+Submitting).
    func speak(_ request: SynthesisRequest) async throws {
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
            switch phase {
            case .starting:
                parked.append((request, waiter))
            case .recovering:
                hold(request, waiter: waiter)
            default:
                submit(request, waiter: waiter)
            }
        }
    }

    /// Never waits on the server: bookkeeping, then the command is queued on the connection.
    func stop(_ ids: [UInt64]) {
        stopOnQueue(ids)
    }

    func pause() {
        pauseOnQueue()
    }

    func resume() {
        resumeOnQueue()
    }

    /// Synchronous: when it returns, the connection is closed and the event stream is finished.
    /// From any thread, `queue` included: a task that resumed from `speak` may finish there and
    /// drop the synthesizer's last reference, whose deinit calls this.
    nonisolated func shutdown() {
        if executor.isCurrent { return onQueue { $0.shutdownOnQueue() } }
        queue.sync { onQueue { $0.shutdownOnQueue() } }
    }

    // MARK: Notices

    func handle(_ event: SSIPEvent, generation: UInt64) {
        guard case .connected(let link) = phase, link.generation == generation else { return }
        defer { watchForStall() }
        switch event.kind {
        case .begin: speakingMessage = event.messageID
        case .end, .cancel: if speakingMessage == event.messageID { speakingMessage = nil }
        case .mark, .pause, .resume: break
        }
        guard let track = tracks[event.messageID] else {
            if activeSubmission?.speakSent == true { early.append(event) }
            return
        }
        noteProgress(spoken: event.kind != .cancel)
        let messageID = event.messageID
        switch track {
        case .ghost(let stopOnBegin):
            switch event.kind {
            case .begin where stopOnBegin:
                tracks[messageID] = .ghost(stopOnBegin: false)
                command("STOP", on: link)
            case .end, .cancel:
                tracks[messageID] = nil
            case .begin, .mark, .pause, .resume:
                break
            }
        case .live(let id):
            guard var utterance = utterances[id] else {
                tracks[messageID] = nil
                return
            }
            switch event.kind {
            case .begin:
                utterance.stage = .speaking(messageID: messageID)
                let first = !utterance.started
                utterance.started = true
                utterances[id] = utterance
                if first { continuation.yield(.started(id)) }
            case .mark(let name):
                if !SpeechdMapping.isInternalMark(name) { continuation.yield(.mark(id, name)) }
            case .end:
                tracks[messageID] = nil
                finish(id, .done)
            case .cancel:
                // Every cancel we asked for turned the message into a ghost first: this one is
                // speech-dispatcher's own doing (a message of higher priority, or a newer text).
                tracks[messageID] = nil
                finish(id, .interrupted)
            case .pause, .resume:
                break // we never send PAUSE (see pauseOnQueue)
            }
        }
    }

    /// `failure`: with `.error`, what went wrong, for a caller waiting on it.
    func finish(_ id: UInt64, _ end: SynthesisEnd, failure: String? = nil) {
        guard utterances.removeValue(forKey: id) != nil else { return }
        if let failure { continuation.yield(.failed(id, reason: failure)) }
        continuation.yield(.finished(id, end))
    }

    func finishAll(_ end: SynthesisEnd, failure: String? = nil) {
        let all = utterances.values.sorted { $0.sequence < $1.sequence }
        utterances.removeAll()
        tracks.removeAll()
        orphans.removeAll()
        early.removeAll()
        speakingMessage = nil
        for utterance in all {
            if let failure { continuation.yield(.failed(utterance.request.id, reason: failure)) }
            continuation.yield(.finished(utterance.request.id, end))
        }
    }

    private func shutdownOnQueue() {
        let previous = phase
        if case .shutDown = previous { return }
        phase = .shutDown
        retry?.cancel()
        retry = nil
        stallCheck?.cancel()
        stallCheck = nil
        stallDeadline = nil
        let reason = "the synthesizer was shut down"
        failWaiters(reason)
        finishAll(.cancelled)
        attempt?.close()
        attempt = nil
        if case .connected(let link) = previous {
            link.connection.close(farewell: SSIPText.command("CANCEL", "self") + SSIPText.command("QUIT"))
        }
        continuation.finish()
    }

    /// Every speak() still waiting throws `.unavailable(reason)`.
    func failWaiters(_ reason: String) {
        let waiting = parked.map(\.waiter) + submissions.compactMap(\.waiter) + [activeSubmission?.waiter].compactMap { $0 }
        parked.removeAll()
        submissions.removeAll()
        activeSubmission = nil
        for waiter in waiting { waiter.resume(throwing: SynthesizerError.unavailable(reason)) }
    }
}
