import Dispatch
import VoiceboxCore
import VoiceboxModels
import VoiceboxThreads

/// Decoder workers kept warm per model and kind, so that no recognition waits for a start it
/// could have avoided: when one is taken and none is left, a fresh one starts in the background.
/// Up to two idle per kind (one given back and the fresh one), stopped after `idleTimeout`
/// without use of their kind (another model in use keeps no unused model's workers). A model
/// loads in 0.1-0.6 s and a worker holds 30-95 MB.
actor DecoderWorkerPool {
    struct Kind: Hashable, Sendable {
        var model: SpeechModel
        var languageModel: Bool
    }

    static let idlePerKind = 2

    private let workerPath: String
    private let launcher: WorkerLauncher
    private let bounds: Bounds
    private let idleTimeout: Duration
    private let log: LogSink?
    private var idle: [Kind: [DecoderWorker]] = [:]
    private var starting: Set<Kind> = []
    /// Workers whose end is watched (once each, however often they come back idle).
    private var watched: Set<Int32> = []
    private var busy: [Kind: Int] = [:]
    /// Bumped whenever a kind is used, so a timer set before then does nothing.
    private var generation: [Kind: Int] = [:]
    private var expiry: [Kind: Task<Void, Never>] = [:]
    /// Kinds whose last start failed (their model did not load), until one starts.
    private var failedStarts: Set<Kind> = []

    init(workerPath: String, idleTimeout: Duration, bounds: Bounds, log: LogSink?) {
        self.workerPath = workerPath
        self.bounds = bounds
        launcher = WorkerLauncher(startBound: bounds[.workerStart])
        self.idleTimeout = idleTimeout
        self.log = log
    }

    /// A worker for `kind`: a warm one, or one started now (waiting for its model to load).
    func take(_ kind: Kind) async throws -> DecoderWorker {
        touch(kind)
        busy[kind, default: 0] += 1
        while var warm = idle[kind], let worker = warm.popLast() {
            idle[kind] = warm
            guard !worker.hasEnded else { continue }  // died idle; its watch has not dropped it yet
            // Stopped while idle: it would hold the call until its bound (10 s). Killed; its
            // watch drops it.
            if worker.isSuspended {
                log?("voiceboxd: a warm recognition worker (pid \(worker.pid)) was stopped; replaced")
                worker.stop()
                continue
            }
            replenish(kind)
            return worker
        }
        do {
            let worker = try await start(kind)
            failedStarts.remove(kind)
            replenish(kind)
            return worker
        } catch {
            failedStarts.insert(kind)
            busy[kind, default: 1] -= 1
            scheduleExpiry(kind)
            throw error
        }
    }

    /// Takes a worker back once its recognition is over; a broken one, or one too many, is stopped.
    func giveBack(_ worker: DecoderWorker) {
        touch(worker.kind)
        busy[worker.kind, default: 1] -= 1
        if !worker.isBroken, idle[worker.kind, default: []].count < Self.idlePerKind {
            keepIdle(worker)
        }
        scheduleExpiry(worker.kind)
    }

    /// Keeps `worker` idle, watched: one that dies idle is dropped (and reaped) at once.
    private func keepIdle(_ worker: DecoderWorker) {
        idle[worker.kind, default: []].append(worker)
        guard watched.insert(worker.pid).inserted else { return }
        let (ending, kind, pid) = (worker.ending(), worker.kind, worker.pid)
        Task { [weak self] in
            await ending()
            await self?.dropEnded(kind, pid)
        }
    }

    /// A worker that died while idle (killed, the OOM killer) is dropped and, when its kind has
    /// none left, replaced in the background, so that the next recognition does not wait for a
    /// model load. Not one stopped by the pool itself (expiry, `stopIdle`): it is no longer idle.
    private func dropEnded(_ kind: Kind, _ pid: Int32) {
        watched.remove(pid)
        guard idle[kind]?.contains(where: { $0.pid == pid }) == true else { return }
        idle[kind]?.removeAll { $0.pid == pid }
        replenish(kind)
    }

    /// Stops every idle worker now.
    func stopIdle() {
        for kind in idle.keys { touch(kind) }
        idle = [:]
    }

    func failedToLoadLastTime(_ kind: Kind) -> Bool { failedStarts.contains(kind) }

    var idleCount: Int { idle.values.reduce(0) { $0 + $1.count } }
    var idleWorkerIDs: [Int32] { idle.values.flatMap { $0.map(\.pid) } }

    /// One worker started in the background when none of this kind is left idle or starting.
    private func replenish(_ kind: Kind) {
        guard idle[kind, default: []].isEmpty, !starting.contains(kind) else { return }
        starting.insert(kind)
        Task {
            let worker = try? await start(kind)
            finishReplenishing(kind, worker)
        }
    }

    private func finishReplenishing(_ kind: Kind, _ worker: DecoderWorker?) {
        starting.remove(kind)
        if let worker, idle[kind, default: []].count < Self.idlePerKind { keepIdle(worker) }
        scheduleExpiry(kind)
    }

    /// Starts one and waits for its model to load, holding no thread.
    private nonisolated func start(_ kind: Kind) async throws -> DecoderWorker {
        try await DecoderWorker.start(kind, workerPath: workerPath, launcher: launcher, bounds: bounds, log: log)
    }

    private func touch(_ kind: Kind) {
        generation[kind, default: 0] &+= 1
        expiry.removeValue(forKey: kind)?.cancel()
    }

    /// A timer, not a poll: one sleeping task per kind while it has idle workers and none busy.
    private func scheduleExpiry(_ kind: Kind) {
        guard busy[kind, default: 0] == 0, !idle[kind, default: []].isEmpty else { return }
        let generation = self.generation[kind, default: 0]
        let timeout = idleTimeout
        expiry[kind]?.cancel()
        expiry[kind] = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            await self?.expire(kind, generation)
        }
    }

    private func expire(_ kind: Kind, _ generation: Int) {
        guard generation == self.generation[kind, default: 0], busy[kind, default: 0] == 0 else { return }
        idle[kind] = nil
        expiry[kind] = nil
    }
}
