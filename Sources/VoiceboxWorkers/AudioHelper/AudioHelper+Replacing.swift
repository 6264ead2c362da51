import Glibc
import VoiceboxCore
import VoiceboxSpawn

/// Starting the helper, watching it, and losing and replacing it.
extension AudioHelper {
    /// A start ended: the new helper is taken over and watched, and the calls waiting for a helper
    /// go on; or the failure is noted and a replacement scheduled, and they wait on for it (at most
    /// helper-replacement, or helper-start-failed once no helper could be started).
    func started(_ result: Result<Started, any Error>) {
        let started: Started
        switch result {
        case .failure(let error): return failedToStart("cannot start the audio helper: \(error)")
        case .success(let value): started = value
        }
        defer {
            let awaiting = awaitingHelper.values
            awaitingHelper = [:]
            for call in awaiting { call.resume() }
        }
        guard !shutDown else {
            Glibc.close(started.socket)
            Task { _ = await started.child.reaped(within: .zero) }
            return
        }
        generation += 1
        let generation = generation
        process = Process(child: started.child, socket: started.socket, generation: generation, queue: executor.queue,
                          writeBound: bounds[.helperWrite]) { [weak self] event in
            self?.assumeIsolated { $0.handle(event, of: generation) }
        }
        startFailed = false
    }

    /// Readiness of a helper's socket, or its write deadline (on the actor's queue, from its
    /// sources); events of a helper already lost are dropped.
    private func handle(_ event: WatchedSocket.Event, of generation: UInt64) {
        guard let process, process.generation == generation else { return }
        switch event {
        case .readable:
            switch process.read({ receive($0, $1) }) {
            case nil: break
            case .closed: lost(process, nil)
            case .broken(let why): lost(process, "it broke the protocol (\(why))")
            }
        case .writable:
            if !process.flush() { process.child.signal(SIGKILL) }  // gone or stuck: its end is read next
        case .deadline:
            // What the socket takes now is not late: this queue may have been the late one.
            if !process.flush() || process.writeIsLate {
                process.child.signal(SIGKILL)  // it did not take a request within helper-write
            } else {
                process.armWriteTimer()
            }
        }
    }

    private func failedToStart(_ reason: String) {
        startFailed = true
        // Said a few times, not every 5 s for as long as the helper cannot be started.
        if failures < 3 { log?(reason) }
        scheduleReplacement(after: reason)
    }

    /// `process` ended or misbehaved: no call goes to it any more, everything waiting on it fails
    /// once it is reaped (how it ended names why), and a new one starts after a pause. `why`
    /// nil: it closed its end.
    func lost(_ process: Process, _ why: String?) {
        guard self.process === process else { return }
        self.process = nil
        let waiting = self.waiting
        self.waiting = [:]
        let recordings = takeRecordings()
        process.close()
        let child = process.child, started = process.started
        Task { await bury(child, started: started, why: why, waiting: waiting, recordings: recordings) }
    }

    private func bury(_ child: Child, started: ContinuousClock.Instant, why: String?, waiting: [UInt32: Waiting],
                      recordings: [UInt32: AsyncStream<[Int16]>.Continuation]) async {
        let (termination, killed) = await child.reaped(within: bounds[.workerReap])
        let reason = why.map { "the audio helper was stopped: \($0)" }
            ?? (killed ? "the audio helper stopped answering and was killed" : "the audio helper \(termination)")
        log?(reason)
        end(waiting: waiting, recordings: recordings, reason: reason)
        if ContinuousClock.now - started > bounds[.helperRestartReset] { failures = 0 }
        scheduleReplacement(after: reason)
    }

    private func scheduleReplacement(after reason: String) {
        guard !shutDown else { return }
        lastEnd = reason
        let pause = Self.pause(afterFailures: failures, first: bounds[.helperRestartFirst], limit: bounds[.helperRestartLimit])
        failures += 1
        Task { [weak self] in
            try? await Task.sleep(for: pause)
            await self?.launch()
        }
    }

    /// Starts a replacement on `starter`; the actor takes it over once it runs (`started`).
    private func launch() {
        guard !shutDown else { return }
        starter.async { [weak self] in
            guard let self else { return }
            let result = start()
            onQueue { $0.started(result) }
        }
    }

    /// The pause before the next replacement: `first`, doubled for each failure before it, at most `limit`.
    static func pause(afterFailures failures: Int, first: Duration, limit: Duration) -> Duration {
        min(limit, first * (1 << min(failures, 16)))
    }

    /// The recordings whose samples still come, ended on the service's side: none is taken any more.
    func takeRecordings() -> [UInt32: AsyncStream<[Int16]>.Continuation] {
        var taken: [UInt32: AsyncStream<[Int16]>.Continuation] = [:]
        for (id, capture) in captures {
            guard let chunks = capture.chunks else { continue }
            taken[id] = chunks
            captures[id]?.chunks = nil
        }
        return taken
    }

    /// What waited on a helper that is gone fails: each call `lost`, each recording
    /// `serverUnavailable`, set before its samples finish.
    func end(waiting: [UInt32: Waiting], recordings: [UInt32: AsyncStream<[Int16]>.Continuation], reason: String) {
        for entry in waiting.values {
            entry.timeout.cancel()
            entry.reply.resume(returning: .lost(reason))
        }
        for (id, chunks) in recordings {
            captures[id]?.failure = .serverUnavailable(reason)
            chunks.finish()
        }
    }
}
