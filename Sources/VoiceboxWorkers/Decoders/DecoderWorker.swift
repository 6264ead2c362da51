import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxModels
import VoiceboxSpawn
import VoiceboxThreads

/// One `voicebox-worker decoder` process with its model loaded (see `WorkerProtocol`): the
/// service's end of its socket, and a bounded exchange of one request and one answer at a time.
/// Used by one recognition at a time; the pool holds it in between.
final class DecoderWorker: Sendable {
    let kind: DecoderWorkerPool.Kind
    /// Its waits: `worker-model-load`, `worker-answer`, `worker-end`, `worker-reap`, `worker-cancel`.
    let bounds: Bounds
    private let child: Child
    private let socket: Int32
    private let log: LogSink?
    /// The reader, held for the length of a wait for an answer (one exchange at a time).
    private let reader: Locked<MessageReader>
    /// Whether the worker broke (died, went silent, broke the protocol, was stopped for a cancel):
    /// a broken one is never used again. A lock of its own, so that `stop()` never waits for an
    /// exchange in progress.
    private let state: Locked<(broken: Bool, stoppedByUs: Bool, why: String?)>

    var pid: pid_t { child.pid }
    var isBroken: Bool { state.withLock { $0.broken } }
    /// Broken because the process ended by itself (a crash, the OOM killer), not stopped by us for
    /// silence or a protocol violation.
    var diedByItself: Bool { state.withLock { $0.broken && !$0.stoppedByUs } }
    /// Ended by a signal (the OOM killer, a person, a crash), not by exiting: a worker that exits
    /// has run, and so has seen what it was asked (a grammar whose network outgrows its data limit
    /// ends it with status 255).
    var endedBySignal: Bool {
        if case .signalled = child.termination { return true }
        return false
    }
    /// Whether the process has ended (killed while idle, by the OOM killer or a person); never blocks.
    var hasEnded: Bool { child.termination != nil }

    /// Returns once the process has ended, without holding a thread (its pidfd). Holds only the
    /// process, not this worker, so dropping the worker still stops it.
    func ending() -> @Sendable () async -> Void {
        let child = self.child
        return { _ = await child.exited() }
    }

    /// Starts a worker and waits, at most `worker-model-load`, for its model to load. Blocks.
    init(_ kind: DecoderWorkerPool.Kind, workerPath: String, launcher: WorkerLauncher, bounds: Bounds, log: LogSink?) throws {
        self.kind = kind
        self.bounds = bounds
        self.log = log
        var arguments = [WorkerProtocol.decoderMode, "--parent", "\(getpid())", "--language", kind.model.language,
                         "--acoustic", kind.model.acousticModel, "--dictionary", kind.model.dictionary]
        if kind.languageModel { arguments += ["--language-model", kind.model.languageModel] }
        if log != nil { arguments += ["--log", "all"] }
        // Descriptor 3 is the socket; standard output is inherited because pocketsphinx prints a
        // grammar it cannot parse there.
        do {
            (child, socket) = try launcher.startWithSocket(ChildSpec(workerPath, arguments, environment: WorkerAudioFile.environment))
        } catch {
            throw RecognitionError.engineFailure("cannot start the recognition worker: \(error)")
        }
        reader = Locked(MessageReader(descriptor: socket))
        state = Locked((false, false, nil))
        let name = "the \(kind.model.language) model (\(kind.model.acousticModel))"
        let (tag, payload) = try answer(within: bounds[.workerModelLoad], loading: name)
        switch tag {
        case .loaded: return
        case .failure: throw Self.error(fromFailure: payload)
        default: throw broke("\(tag) before the model loaded")
        }
    }

    deinit {
        close(socket)
        child.signal(SIGKILL)  // idle or done: nothing of it is worth a clean exit
        _ = child.end(within: bounds[.workerReap])
    }

    /// How long it may take to answer a request carrying `samples` (`worker-answer` and more).
    func answerBound(forSamples samples: Int) -> Duration {
        WorkerProtocol.answerBound(forSamples: samples, base: bounds[.workerAnswer])
    }

    /// Sends `tag` with `payload` and waits for the answer (log lines before it go to the log).
    /// Throws `RecognitionError.engineFailure` naming how a worker that failed to answer ended.
    func ask(_ tag: WorkerProtocol.Tag, _ payload: [UInt8] = [], bound: Duration) throws -> (WorkerProtocol.Tag, [UInt8]) {
        // A later request of the same recognition fails as the first did, naming how it ended.
        if let why = state.withLock({ $0.broken ? ($0.why ?? "the recognition worker broke earlier") : nil }) {
            throw RecognitionError.engineFailure(why)
        }
        let deadline = ContinuousClock.now + bound
        try write(WorkerProtocol.encode(tag, payload), until: deadline)
        return try answer(within: deadline - ContinuousClock.now, loading: nil)
    }

    private func write(_ bytes: [UInt8], until deadline: ContinuousClock.Instant) throws {
        switch FrameReader.write(bytes, to: socket, until: deadline) {
        case nil: return
        case ETIMEDOUT?: throw fault("did not take a request in time and was stopped", kill: true)
        default: throw fault(nil, kill: false)  // EPIPE, ECONNRESET: it has gone; its end says why.
        }
    }

    private func answer(within bound: Duration, loading name: String?) throws -> (WorkerProtocol.Tag, [UInt8]) {
        var lines: [String] = []
        let deadline = ContinuousClock.now + bound
        while true {
            let outcome = reader.withLock { $0.next(within: max(.zero, deadline - ContinuousClock.now)) }
            switch outcome {
            case .message(.log, let payload):
                let line = String(decoding: payload.dropFirst(), as: UTF8.self)
                if payload.first == UInt8(ascii: "e") { lines.append(line) } else { log?(line) }
            case .message(let tag, let payload):
                return (tag, payload)
            case .closed, .failed:
                throw fault(nil, kill: false, loading: name, lines: lines)
            case .silent:
                throw fault("sent nothing for \(Self.seconds(bound)) and was stopped", kill: true, loading: name, lines: lines)
            case .malformed(let why):
                throw broke(why)
            }
        }
    }

    /// Marks the worker broken and says how it ended: killed by a signal, exited, or stopped by us.
    private func fault(_ stopped: String?, kill: Bool, loading name: String? = nil, lines: [String] = []) -> RecognitionError {
        state.withLock { state in
            state.broken = true
            state.stoppedByUs = state.stoppedByUs || kill
        }
        if kill { child.signal(SIGKILL) }
        let ending = child.end(within: bounds[.workerEnd]).termination
        let first = lines.first.map { ": \($0)" } ?? ""
        if let name {
            if let stopped { return .engineFailure("\(name) did not load: the recognition worker \(stopped)") }
            if case .signalled = ending { return .engineFailure("\(name) is damaged: pocketsphinx crashed loading it (\(ending))\(first)") }
            return .engineFailure("\(name) does not load\(lines.first.map { ": \($0)" } ?? " (the recognition worker \(ending))")")
        }
        let how = stopped ?? "was \(Self.describe(ending))"
        let why = "the recognition worker (\(WorkerProtocol.executableName), \(kind.model.language)) \(how)\(first)"
        state.withLock { state in if state.why == nil { state.why = why } }
        return .engineFailure(why)
    }

    /// Whether the process is stopped (SIGSTOP, a debugger): it would not answer its next call
    /// before the call's bound.
    var isSuspended: Bool { ForeignProcess.isStopped(pid) }

    /// Stops the worker for good (a cancel): a call waiting for it ends at once, as for a worker
    /// killed by SIGKILL, and it is never used again nor replaced within the same call.
    func stop() {
        state.withLock { state in
            state.broken = true
            state.stoppedByUs = true
        }
        child.signal(SIGKILL)  // its socket closes: a wait for its answer ends at once
    }

    /// Marks the worker broken for good (a protocol violation) and stops it.
    func broke(_ what: String) -> RecognitionError {
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
