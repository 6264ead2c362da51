import Dispatch
import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxModels
import VoiceboxSpawn
import VoiceboxThreads

/// One `voicebox-worker decoder` process with its model loaded (see `WorkerProtocol`): the
/// service's end of its socket, and a bounded exchange of one request and one answer at a time.
/// Used by one recognition at a time; the pool holds it in between.
///
/// An actor on a queue of its own, where its socket is watched (`FramedSocket`): a request is
/// written as the socket takes it and its answer read as it comes, with the answer's bound as the
/// socket's timer. No thread waits on the worker; the recognition waiting for an answer is a
/// suspended task.
actor DecoderWorker {
    /// How a worker broke: what later requests fail with.
    private struct Health {
        var broken = false
        /// Stopped by us (silence, a protocol violation, a cancel), not ended by itself.
        var stoppedByUs = false
        var why: String?
    }

    /// What ended a wait for an answer.
    private enum Arrival {
        case message(WorkerProtocol.Tag, [UInt8])
        case ended(FramedSocket.End)
        case late
    }

    nonisolated let kind: DecoderWorkerPool.Kind
    /// Its waits: `worker-model-load`, `worker-answer`, `worker-end`, `worker-reap`, `worker-cancel`.
    nonisolated let bounds: Bounds
    private nonisolated let child: Child
    private nonisolated let log: LogSink?
    /// A cell of its own, so that `stop()` and the pool's questions never wait for the actor.
    private nonisolated let health = Locked(Health())
    private nonisolated let executor = QueueExecutor(label: "voicebox.decoder-worker")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private var socket: FramedSocket?
    /// How the worker's side of the socket ended, once it has.
    private var end: FramedSocket.End?
    /// The exchange under way, waiting for its answer.
    private var waiting: CheckedContinuation<Arrival, Never>?
    /// The worker's error lines since the request (the first says why a load failed).
    private var lines: [String] = []
    /// When the answer waited for is late, and when the socket's timer fires (nil: not set). The
    /// timer is moved only when an answer is due before it: one that fires early finds the
    /// answer in or not yet late and is set again, so that an exchange (tens a second while a
    /// file decodes) does not reprogram Dispatch's timers twice.
    private var answerDue: DispatchTime?
    private var timerDue: DispatchTime?

    nonisolated var pid: pid_t { child.pid }
    nonisolated var isBroken: Bool { health.withLock { $0.broken } }
    /// Broken because the process ended by itself (a crash, the OOM killer), not stopped by us for
    /// silence or a protocol violation.
    nonisolated var diedByItself: Bool { health.withLock { $0.broken && !$0.stoppedByUs } }
    /// Ended by a signal (the OOM killer, a person, a crash), not by exiting: a worker that exits
    /// has run, and so has seen what it was asked (a grammar whose network outgrows its data limit
    /// ends it with status 255).
    nonisolated var endedBySignal: Bool {
        if case .signalled = child.termination { return true }
        return false
    }
    /// Whether the process has ended (killed while idle, by the OOM killer or a person); never blocks.
    nonisolated var hasEnded: Bool { child.termination != nil }
    /// Whether the process is stopped (SIGSTOP, a debugger): it would not answer its next call
    /// before the call's bound.
    nonisolated var isSuspended: Bool { ForeignProcess.isStopped(pid) }

    /// Returns once the process has ended, without holding a thread (its pidfd). Holds only the
    /// process, not this worker, so dropping the worker still stops it.
    nonisolated func ending() -> @Sendable () async -> Void {
        let child = self.child
        return { _ = await child.exited() }
    }

    /// Starts a worker and waits, at most `worker-model-load`, for its model to load.
    static func start(_ kind: DecoderWorkerPool.Kind, workerPath: String, launcher: WorkerLauncher, bounds: Bounds,
                      log: LogSink?) async throws -> DecoderWorker {
        var arguments = [WorkerProtocol.decoderMode, "--parent", "\(getpid())", "--language", kind.model.language,
                         "--acoustic", kind.model.acousticModel, "--dictionary", kind.model.dictionary]
        if kind.languageModel { arguments += ["--language-model", kind.model.languageModel] }
        if log != nil { arguments += ["--log", "all"] }
        // Descriptor 3 is the socket; standard output is inherited because pocketsphinx prints a
        // grammar it cannot parse there.
        let started: (child: Child, socket: Int32)
        do {
            started = try await launcher.startWithSocket(ChildSpec(workerPath, arguments, environment: WorkerAudioFile.environment))
        } catch {
            throw RecognitionError.engineFailure("cannot start the recognition worker: \(error)")
        }
        let worker = DecoderWorker(kind, child: started.child, bounds: bounds, log: log)
        try await worker.load(socket: started.socket)
        return worker
    }

    private init(_ kind: DecoderWorkerPool.Kind, child: Child, bounds: Bounds, log: LogSink?) {
        self.kind = kind
        self.child = child
        self.bounds = bounds
        self.log = log
    }

    isolated deinit {
        // Idle or done: nothing of it is worth a clean exit. Killed once its socket is no longer
        // watched (`WatchedSocket.cancel(then:)`).
        let (child, bound) = (child, bounds[.workerReap])
        let end: @Sendable () -> Void = {
            child.signal(SIGKILL)
            Task { _ = await child.reaped(within: bound) }
        }
        if let socket { socket.close(then: end) } else { end() }
    }

    /// Watches the socket and waits for the model to load.
    private func load(socket descriptor: Int32) async throws {
        socket = FramedSocket(descriptor: descriptor, maximumPayload: WorkerProtocol.maximumPayload,
                              queue: executor.queue) { [weak self] event in
            self?.assumeIsolated { $0.handle(event) }
        }
        let name = "the \(kind.model.language) model (\(kind.model.acousticModel))"
        let (tag, payload) = try await answer(within: bounds[.workerModelLoad], loading: name)
        switch tag {
        case .loaded: return
        case .failure: throw Self.error(fromFailure: payload)
        default: throw broke("\(tag) before the model loaded")
        }
    }

    /// How long it may take to answer a request carrying `samples` (`worker-answer` and more).
    nonisolated func answerBound(forSamples samples: Int) -> Duration {
        WorkerProtocol.answerBound(forSamples: samples, base: bounds[.workerAnswer])
    }

    /// Sends `tag` with `payload` and waits for the answer (log lines before it go to the log).
    /// Throws `RecognitionError.engineFailure` naming how a worker that failed to answer ended.
    func ask(_ tag: WorkerProtocol.Tag, _ payload: [UInt8] = [], bound: Duration) async throws -> (WorkerProtocol.Tag, [UInt8]) {
        // A later request of the same recognition fails as the first did, naming how it ended.
        if let why = health.withLock({ $0.broken ? ($0.why ?? "the recognition worker broke earlier") : nil }) {
            throw RecognitionError.engineFailure(why)
        }
        lines = []
        guard let socket, socket.send(WorkerProtocol.encode(tag, payload)) else {
            throw await fault(nil, kill: false)  // EPIPE, ECONNRESET: it has gone; its end says why.
        }
        return try await answer(within: bound, loading: nil)
    }

    private func answer(within bound: Duration, loading name: String?) async throws -> (WorkerProtocol.Tag, [UInt8]) {
        let due = DispatchTime.now() + bound.inSeconds
        answerDue = due
        if timerDue.map({ $0 > due }) ?? true { setTimer(due) }
        let arrival: Arrival
        if let end {
            arrival = .ended(end)
        } else {
            arrival = await withCheckedContinuation { waiting = $0 }
        }
        answerDue = nil
        switch arrival {
        case .message(let tag, let payload):
            return (tag, payload)
        case .ended(.closed):
            throw await fault(nil, kill: false, loading: name)
        case .ended(.broken(let why)):
            throw broke(why)
        case .late:
            let what = socket?.isWaitingToWrite == true ? "did not take a request in time"
                : "sent nothing for \(Self.seconds(bound))"
            throw await fault("\(what) and was stopped", kill: true, loading: name)
        }
    }

    /// Readiness of the socket, or the answer's bound (on the actor's queue, from its sources).
    private func handle(_ event: WatchedSocket.Event) {
        guard let socket else { return }
        switch event {
        case .readable:
            guard let ended = socket.read({ receive($0, $1) }) else { return }
            end = ended
            socket.close()
            arrive(.ended(ended))
        case .writable:
            _ = socket.flush()  // a failure: the worker has gone, and its end is read next
        case .deadline:
            timerDue = nil  // it has fired
            guard let due = answerDue else { return }
            guard DispatchTime.now() >= due else { return setTimer(due) }
            arrive(.late)
        }
    }

    private func setTimer(_ due: DispatchTime) {
        timerDue = due
        socket?.schedule(deadline: due)
    }

    /// One frame from the worker: its log lines, or the answer waited for.
    private func receive(_ tag: UInt8, _ payload: [UInt8]) -> String? {
        guard let known = WorkerProtocol.Tag(rawValue: tag) else { return "an unknown message \(tag)" }
        if known == .log {
            let line = String(decoding: payload.dropFirst(), as: UTF8.self)
            if payload.first == UInt8(ascii: "e") { lines.append(line) } else { log?(line) }
            return nil
        }
        guard waiting != nil else { return "\(known) when nothing was asked" }
        arrive(.message(known, payload))
        return nil
    }

    private func arrive(_ arrival: Arrival) {
        waiting.take()?.resume(returning: arrival)
    }

    /// Marks the worker broken and says how it ended: killed by a signal, exited, or stopped by
    /// us. Waits for its end (`worker-end`) without holding a thread.
    private func fault(_ stopped: String?, kill: Bool, loading name: String? = nil) async -> RecognitionError {
        health.withLock { health in
            health.broken = true
            health.stoppedByUs = health.stoppedByUs || kill
        }
        // Its socket stays watched until it has told its end (`handle`): killed here, the worker
        // hangs up on it first.
        if kill { child.signal(SIGKILL) }
        let ending = await child.reaped(within: bounds[.workerEnd]).termination
        let first = lines.first.map { ": \($0)" } ?? ""
        if let name {
            if let stopped { return .engineFailure("\(name) did not load: the recognition worker \(stopped)") }
            if case .signalled = ending { return .engineFailure("\(name) is damaged: pocketsphinx crashed loading it (\(ending))\(first)") }
            return .engineFailure("\(name) does not load\(lines.isEmpty ? " (the recognition worker \(ending))" : first)")
        }
        let how = stopped ?? "was \(Self.describe(ending))"
        let why = "the recognition worker (\(WorkerProtocol.executableName), \(kind.model.language)) \(how)\(first)"
        health.withLock { health in if health.why == nil { health.why = why } }
        return .engineFailure(why)
    }

    /// Stops the worker for good (a cancel), from anywhere: a call waiting for it ends at once, as
    /// for a worker killed by SIGKILL, and it is never used again nor replaced within the same call.
    nonisolated func stop() {
        health.withLock { health in
            health.broken = true
            health.stoppedByUs = true
        }
        child.signal(SIGKILL)  // its socket closes: a wait for its answer ends at once
    }

    /// Marks the worker broken for good (a protocol violation) and stops it.
    nonisolated func broke(_ what: String) -> RecognitionError {
        stop()
        return .engineFailure("the recognition worker broke its protocol (\(what))")
    }

    /// "killed by SIGSEGV (Segmentation fault)"; an exit mid-recognition is a failure too.
    private static func describe(_ termination: Termination) -> String {
        switch termination {
        case .signalled: termination.description
        case .exited(let code): "ended (status \(code)) mid-recognition"
        case .unknown: "ended mid-recognition"
        }
    }

    static func error(fromFailure payload: [UInt8]) -> RecognitionError {
        let reason = String(decoding: payload.dropFirst(), as: UTF8.self)
        switch payload.first {
        case UInt8(ascii: "g"): return .invalidGrammar(reason)
        case UInt8(ascii: "a"): return .invalidArgument(reason)
        default: return .engineFailure(reason)
        }
    }

    /// "10 s", "0.3 s".
    static func seconds(_ duration: Duration) -> String {
        let tenths = (duration.inSeconds * 10).rounded()
        return tenths.truncatingRemainder(dividingBy: 10) == 0 ? "\(Int(tenths / 10)) s" : "\(tenths / 10) s"
    }
}
