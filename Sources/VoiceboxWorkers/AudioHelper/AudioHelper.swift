import Dispatch
import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxSpawn

/// The sound server, reached through the `voicebox-audio` helper process (see
/// `AudioHelperProtocol`): the service's mixer and its microphone, so that the service itself
/// never links libpulse (nor the libsndfile that libpulse brings).
///
/// An actor on a `QueueExecutor`: the running helper's socket is non-blocking and watched by
/// Dispatch sources on that same queue (`Process`), whose handlers enter the actor with
/// `assumeIsolated`, take the frames that came and resume the calls they answer. No thread waits
/// on the helper: requests are written as its socket takes them, answers, mixer events and samples
/// are read as they come, and a helper that ended is reaped through its pidfd. Timeouts are
/// sleeping tasks; a start waits for the launcher on `starter`, off the actor's queue.
///
/// A helper that ends or stops answering is replaced, with a growing pause while replacements
/// keep failing; what it held ends with it (its recordings fail, its cork trigger stops) and the
/// new helper's `serverReady` has the audio session read the server afresh.
public actor AudioHelper: AudioMixer, AudioCapture {
    /// How a request ended.
    enum Reply: Sendable {
        case outcome(AudioHelperProtocol.Outcome)
        /// No helper runs (one is being replaced, or none can be started): why, for people.
        case unreachable(String)
        /// The helper it went to ended or did not answer in time, having carried it out or not.
        case lost(String)
        case cancelled
    }

    /// A request waiting for its answer; resumed on the actor.
    struct Waiting {
        let reply: CheckedContinuation<Reply, Never>
        let timeout: Task<Void, Never>
    }

    /// A recording, from its open until its stream is dropped.
    struct Capture {
        /// Where its samples go, while they may come: until it ends or is closed.
        var chunks: AsyncStream<[Int16]>.Continuation?
        /// Why it ended by itself (`CaptureStream.failure`).
        var failure: CaptureError?
        /// Its close has begun (a stream dropped unclosed is closed then).
        var closed = false
    }

    typealias Started = (child: Child, socket: Int32)

    /// Its waits (`Bound`, helper-*), read here only:
    /// - helper-answer, helper-close: a request's answer, a recording's close; a helper that does
    ///   not answer in that time is killed and replaced;
    /// - helper-write: a request to be taken (from when the socket begins to take it);
    /// - helper-ping: while a recording is open, the helper is asked to answer this often, within
    ///   the same bound: a stopped helper sends no samples, and a recording must not wait for
    ///   them forever;
    /// - helper-replacement: how long a call waits for the replacement of a helper that ended
    ///   before it fails: above the longest pause between replacements and a start. What the
    ///   audio session gives back must reach the server even while the helper is killed repeatedly;
    /// - helper-start-failed: how long a call waits while no helper could be started at all (a
    ///   missing executable): not long, as calls fail at once while the sound server is away;
    /// - helper-restart-first, helper-restart-limit: the pause before a replacement, doubling
    ///   from the first while replacements keep failing, up to the limit.
    nonisolated let bounds: Bounds

    private nonisolated let helperPath: String
    nonisolated let log: LogSink?
    private nonisolated let launcher = WorkerLauncher()
    nonisolated let executor = QueueExecutor(label: "voicebox.audio-helper")
    /// Where a replacement is started: the start waits for the launcher's thread (worker-start),
    /// which the actor's queue must not.
    nonisolated let starter = DispatchQueue(label: "voicebox.audio-helper.start")
    public nonisolated let events: AsyncStream<MixerEvent>
    nonisolated let eventSink: AsyncStream<MixerEvent>.Continuation

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    // MARK: State (on the actor's queue)

    var process: Process?
    /// Counts the processes started, so that their sources' events and timeouts find their own.
    var generation: UInt64 = 0
    var nextRequest: UInt32 = 1
    var nextCapture: UInt32 = 1
    var waiting: [UInt32: Waiting] = [:]
    var captures: [UInt32: Capture] = [:]
    /// Replacements that failed in a row (the pause before the next grows with them).
    var failures = 0
    var shutDown = false
    /// Why the last helper ended, while no new one runs yet.
    var lastEnd = "the audio helper is starting"
    /// The last attempt to start a helper failed (rather than a helper ending): calls do not
    /// wait long for a replacement that may never come.
    var startFailed = false
    /// Whether the heartbeat runs (while any recording is open).
    var heartbeatRuns = false
    /// Calls waiting for a replacement to start, by a number of their own.
    var awaitingHelper: [UInt64: CheckedContinuation<Void, Never>] = [:]
    var nextAwaiting: UInt64 = 0

    /// Starts the helper at once (waiting for the launcher, as a start does: worker-start);
    /// `events` says `.serverReady` once it has reached the server. Taking it over is the first
    /// job on the actor's queue, so a call made from now on finds it running or knows it could
    /// not be started. `bounds`: voiceboxd's (the helper-* ones are read).
    public init(helperPath: String, bounds: Bounds = Bounds(), log: LogSink? = nil) {
        self.helperPath = helperPath
        self.bounds = bounds
        self.log = log
        (events, eventSink) = AsyncStream.makeStream(of: MixerEvent.self, bufferingPolicy: .bufferingNewest(4096))
        let first = start()
        executor.queue.async { self.assumeIsolated { $0.started(first) } }
    }

    deinit {
        // Nothing can wait on it any more (a waiting call holds it); its running helper, if
        // any, sees its socket close with `Process` and is killed with its `Child`.
        eventSink.finish()
    }

    /// `voicebox-audio` beside this executable (voiceboxd and the helper are installed together).
    public static func besideThisExecutable() -> String {
        WorkerAudioFiles.besideThisExecutable(AudioHelperProtocol.executableName)
    }

    /// Ends the helper (its recordings and trigger with it) and `events`; calls fail from now on.
    /// Returns once the helper has ended: closing its socket ends it (it exits 0, its server
    /// connections close), and one still there after worker-reap is killed.
    public func shutdown() async {
        shutDown = true
        lastEnd = "the service is stopping"
        let process = self.process
        self.process = nil
        let waiting = self.waiting, awaiting = awaitingHelper.values
        self.waiting = [:]
        awaitingHelper = [:]
        for call in awaiting { call.resume() }
        end(waiting: waiting, recordings: takeRecordings(), reason: lastEnd)
        eventSink.finish()
        guard let process else { return }
        process.close()
        _ = await process.child.reaped(within: bounds[.workerReap])
    }

    /// Runs `work` on the actor from its queue, after what is queued there: a cancellation
    /// handler's way in, and a start's result.
    nonisolated func onQueue(_ work: @escaping @Sendable (isolated AudioHelper) -> Void) {
        executor.queue.async { self.assumeIsolated(work) }
    }

    /// Starts a helper with the launcher, waiting for it (worker-start): on `starter` or in `init`.
    nonisolated func start() -> Result<Started, any Error> {
        let spec = ChildSpec(helperPath, ["--parent", "\(getpid())"], environment: Self.environment())
        return Result { try launcher.startWithSocket(spec) }
    }

    /// The helper's environment: the service's (libpulse finds the server through it), with the
    /// streams it opens claimed for the service's pid (libpulse's `PULSE_PROP_*` variables). A crash
    /// is an answer, not a report: no backtrace, and a sanitizer build (the tests') leaves crash
    /// signals alone, so that the helper's end names them.
    static func environment() -> [String] {
        var entries: [String] = []
        var cursor = environ
        while let entry = cursor.pointee {
            let text = String(cString: entry)
            if text.hasPrefix("TSAN_OPTIONS=") || text.hasPrefix("ASAN_OPTIONS=") {
                entries.append(text + " handle_segv=0 handle_sigbus=0 handle_sigfpe=0")
            } else if !text.hasPrefix("PULSE_PROP_application.process.id=") && !text.hasPrefix("SWIFT_BACKTRACE=") {
                entries.append(text)
            }
            cursor += 1
        }
        return entries + ["PULSE_PROP_application.process.id=\(getpid())", "SWIFT_BACKTRACE=enable=no"]
    }

    // MARK: - What the helper sends

    /// Handles one frame; returns why it is malformed, nil if it is not.
    func receive(_ tag: UInt8, _ payload: [UInt8]) -> String? {
        switch AudioHelperProtocol.Tag(rawValue: tag) {
        case .answer:
            guard let answer = try? JSON.decode(AudioHelperProtocol.Answer.self, from: payload) else { return "a malformed answer" }
            // An answer nobody waits for: its request was cancelled, timed out, or sent one-way.
            guard let entry = waiting.removeValue(forKey: answer.id) else { return nil }
            entry.timeout.cancel()
            entry.reply.resume(returning: .outcome(answer.outcome))
        case .mixerEvent:
            guard let event = try? JSON.decode(MixerEvent.self, from: payload) else { return "a malformed event" }
            eventSink.yield(event)
        case .samples:
            guard let (capture, samples) = AudioHelperProtocol.samples(fromPayload: payload) else { return "malformed samples" }
            captures[capture]?.chunks?.yield(samples)
        case .captureEnded:
            guard let end = try? JSON.decode(AudioHelperProtocol.CaptureEnd.self, from: payload) else { return "a malformed capture end" }
            if let chunks = captures[end.capture]?.chunks {
                captures[end.capture]?.failure = end.failure
                captures[end.capture]?.chunks = nil
                chunks.finish()
            }
        case .request, nil:
            return "a message \(tag)"
        }
        return nil
    }
}
