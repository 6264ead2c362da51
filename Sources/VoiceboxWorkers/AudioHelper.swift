import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxLock
import VoiceboxSpawn

/// The sound server, reached through the `voicebox-audio` helper process (see
/// `AudioHelperProtocol`): the service's mixer and its microphone, so that the service itself
/// never links libpulse (nor the libsndfile that libpulse brings).
///
/// A helper that ends or stops answering is replaced, with a growing pause while replacements
/// keep failing; what it held ends with it (its recordings fail, its cork trigger stops) and the
/// new helper's `serverReady` has the audio session read the server afresh.
public final class AudioHelper: AudioMixer, AudioCapture {
    /// One running helper: the process and the service's end of its socket.
    final class Process: Sendable {
        let child: Child
        let socket: Int32
        let started = ContinuousClock.now
        /// How long a request may take to be taken (helper-write).
        let writeBound: Duration
        /// The socket again, behind the lock that keeps frames whole, one at a time. (Not
        /// `Locked<Void>`: ThreadSanitizer reports accesses to a zero-sized value as races.)
        let writing: Locked<Int32>

        init(child: Child, socket: Int32, writeBound: Duration) {
            self.child = child
            self.socket = socket
            self.writeBound = writeBound
            writing = Locked(socket)
        }

        /// Hands `bytes` to the helper; false if it is gone or did not take them in time.
        func send(_ bytes: [UInt8]) -> Bool {
            writing.withLock { socket in
                FrameReader.write(bytes, to: socket, until: .now + writeBound) == nil
            }
        }
    }

    /// How a request ended.
    enum Reply: Sendable {
        case outcome(AudioHelperProtocol.Outcome)
        /// No helper runs (one is being replaced, or none can be started): why, for people.
        case unreachable(String)
        /// The helper it went to ended or did not answer in time, having carried it out or not.
        case lost(String)
        case cancelled
    }

    struct Waiting {
        /// Answers are decoded on the reader thread: handed over under a lock ThreadSanitizer sees.
        let reply: HandOver<Reply>
        let timeout: Task<Void, Never>
    }

    /// A recording's receiving end.
    struct CaptureSink: Sendable {
        let chunks: AsyncStream<[Int16]>.Continuation
        let failure: Locked<CaptureError?>
    }

    struct State {
        var process: Process?
        var nextRequest: UInt32 = 1
        var nextCapture: UInt32 = 1
        var waiting: [UInt32: Waiting] = [:]
        var captures: [UInt32: CaptureSink] = [:]
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
    }

    /// Its waits (`Bound`, helper-*), read here only:
    /// - helper-answer, helper-close: a request's answer, a recording's close; a helper that does
    ///   not answer in that time is killed and replaced;
    /// - helper-write: a request to be taken;
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
    let bounds: Bounds

    private let helperPath: String
    private let log: LogSink?
    private let launcher = WorkerLauncher()
    let state = Locked(State())
    public let events: AsyncStream<MixerEvent>
    let eventSink: AsyncStream<MixerEvent>.Continuation

    /// Starts the helper at once; `events` says `.serverReady` once it has reached the server.
    /// `bounds`: voiceboxd's (the helper-* ones are read).
    public init(helperPath: String, bounds: Bounds = Bounds(), log: LogSink? = nil) {
        self.helperPath = helperPath
        self.bounds = bounds
        self.log = log
        (events, eventSink) = AsyncStream.makeStream(of: MixerEvent.self, bufferingPolicy: .bufferingNewest(4096))
        launch()
    }

    deinit {
        shutdown()
    }

    /// `voicebox-audio` beside this executable (voiceboxd and the helper are installed together).
    public static func besideThisExecutable() -> String {
        WorkerAudioFiles.besideThisExecutable(AudioHelperProtocol.executableName)
    }

    /// Ends the helper (its recordings and trigger with it) and `events`; calls fail from now on.
    public func shutdown() {
        let (process, waiting, captures, awaiting) = state.withLock { state in
            state.shutDown = true
            state.lastEnd = "the service is stopping"
            defer { state.process = nil; state.waiting = [:]; state.captures = [:]; state.awaitingHelper = [:] }
            return (state.process, state.waiting, state.captures, Array(state.awaitingHelper.values))
        }
        for call in awaiting { call.resume() }
        end(waiting: waiting, captures: captures, reason: "the service is stopping")
        eventSink.finish()
        guard let process else { return }
        // Closing its socket ends it (it exits 0, its server connections close); killed if not.
        Glibc.shutdown(process.socket, Int32(SHUT_RDWR))
        _ = process.child.end(within: bounds[.workerReap])
    }

    // MARK: - Starting and losing the helper

    private func launch() {
        let spec = ChildSpec(helperPath, ["--parent", "\(getpid())"], environment: Self.environment())
        let started: (child: Child, socket: Int32)
        do {
            started = try launcher.startWithSocket(spec)
        } catch {
            return failedToStart("cannot start the audio helper: \(error)")
        }
        let child = started.child
        let process = Process(child: child, socket: started.socket, writeBound: bounds[.helperWrite])
        let (kept, awaiting) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
            defer { state.awaitingHelper = [:] }
            let awaiting = Array(state.awaitingHelper.values)
            guard !state.shutDown else { return (false, awaiting) }
            state.process = process
            state.startFailed = false
            return (true, awaiting)
        }
        for call in awaiting { call.resume() }
        guard kept else {
            close(process.socket)
            _ = child.end(within: .zero)
            return
        }
        OwnThread.start(name: "audio-helper") { [weak self] in
            // The socket is closed only here, once nothing waits on it (`lost` shuts it down).
            defer { close(process.socket) }
            // Blocks until the helper ends: it sends events whenever the server has some.
            var reader = FrameReader(descriptor: process.socket, maximumPayload: AudioHelperProtocol.maximumPayload)
            while true {
                let outcome = reader.next(within: nil)
                guard let self else { return }
                guard case .frame(let tag, let payload) = outcome else {
                    // Closed, or reset by a helper killed with data unread: how it ended says why.
                    let ended = outcome == .closed || outcome == .failed(ECONNRESET)
                    self.lost(process, ended ? nil : "it broke the protocol (\(outcome))")
                    return
                }
                if let why = self.receive(tag, payload) {
                    self.lost(process, "it broke the protocol (\(why))")
                    return
                }
            }
        }
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

    private func failedToStart(_ reason: String) {
        let firstFew = state.withLock { state in
            state.startFailed = true
            return state.failures < 3
        }
        // Said a few times, not every 5 s for as long as the helper cannot be started.
        if firstFew { log?(reason) }
        scheduleReplacement(after: reason)
    }

    /// `process` ended or misbehaved: everything waiting on it fails, and a new one starts after
    /// a pause. `why` nil: it closed its end (how it ended names why).
    func lost(_ process: Process, _ why: String?) {
        guard let (waiting, captures) = state.withLock({ state -> ([UInt32: Waiting], [UInt32: CaptureSink])? in
            guard state.process === process else { return nil }
            state.process = nil
            defer { state.waiting = [:]; state.captures = [:] }
            return (state.waiting, state.captures)
        }) else { return }
        Glibc.shutdown(process.socket, Int32(SHUT_RDWR))
        let (termination, killed) = process.child.end(within: bounds[.workerReap])
        let reason = why.map { "the audio helper was stopped: \($0)" }
            ?? (killed ? "the audio helper stopped answering and was killed" : "the audio helper \(termination)")
        log?(reason)
        end(waiting: waiting, captures: captures, reason: reason)
        let livedLong = ContinuousClock.now - process.started > bounds[.helperRestartReset]
        if livedLong { state.withLock { $0.failures = 0 } }
        scheduleReplacement(after: reason)
    }

    private func scheduleReplacement(after reason: String) {
        let pause: Duration? = state.withLock { state in
            guard !state.shutDown else { return nil }
            state.lastEnd = reason
            defer { state.failures += 1 }
            return Self.pause(afterFailures: state.failures, first: bounds[.helperRestartFirst], limit: bounds[.helperRestartLimit])
        }
        guard let pause else { return }
        Task { [weak self] in
            try? await Task.sleep(for: pause)
            self?.launch()
        }
    }

    /// The pause before the next replacement: `first`, doubled for each failure before it, at most `limit`.
    static func pause(afterFailures failures: Int, first: Duration, limit: Duration) -> Duration {
        min(limit, first * (1 << min(failures, 16)))
    }

    private func end(waiting: [UInt32: Waiting], captures: [UInt32: CaptureSink], reason: String) {
        for entry in waiting.values {
            entry.timeout.cancel()
            entry.reply.resume(returning: .lost(reason))
        }
        for sink in captures.values {
            sink.failure.withLock { $0 = .serverUnavailable(reason) }
            sink.chunks.finish()
        }
    }

    // MARK: - What the helper sends

    /// Handles one frame; returns why it is malformed, nil if it is not.
    private func receive(_ tag: UInt8, _ payload: [UInt8]) -> String? {
        switch AudioHelperProtocol.Tag(rawValue: tag) {
        case .answer:
            guard let answer = try? JSON.decode(AudioHelperProtocol.Answer.self, from: payload) else { return "a malformed answer" }
            // An answer nobody waits for: its request was cancelled, timed out, or sent one-way.
            guard let entry = state.withLock({ $0.waiting.removeValue(forKey: answer.id) }) else { return nil }
            entry.timeout.cancel()
            entry.reply.resume(returning: .outcome(answer.outcome))
        case .mixerEvent:
            guard let event = try? JSON.decode(MixerEvent.self, from: payload) else { return "a malformed event" }
            eventSink.yield(event)
        case .samples:
            guard let (capture, samples) = AudioHelperProtocol.samples(fromPayload: payload) else { return "malformed samples" }
            state.withLock { $0.captures[capture] }?.chunks.yield(samples)
        case .captureEnded:
            guard let end = try? JSON.decode(AudioHelperProtocol.CaptureEnd.self, from: payload) else { return "a malformed capture end" }
            if let sink = state.withLock({ $0.captures.removeValue(forKey: end.capture) }) {
                sink.failure.withLock { $0 = end.failure }
                sink.chunks.finish()
            }
        case .request, nil:
            return "a message \(tag)"
        }
        return nil
    }
}
