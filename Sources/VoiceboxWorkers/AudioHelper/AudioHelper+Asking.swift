import Glibc
import VoiceboxContract
import VoiceboxCore

/// Requests to the helper: each bounded (helper-answer, or the bound it names), and a heartbeat
/// while a recording is open.
extension AudioHelper {
    /// Sends `call` and waits for its answer, at most `bound` (helper-answer unless given); a
    /// helper that does not answer by then is killed (which also hangs up its server connections)
    /// and replaced. A cancelled task stops waiting at once.
    func ask(_ call: AudioHelperProtocol.Call, within bound: Duration? = nil) async -> Reply {
        let bound = bound ?? bounds[.helperAnswer]
        if process == nil, !shutDown {
            await helperReplaced(within: startFailed ? bounds[.helperStartFailed] : bounds[.helperReplacement])
        }
        let id = takeRequestID()
        guard let process else { return .unreachable(lastEnd) }
        let frame = AudioHelperProtocol.frame(.request, json: AudioHelperProtocol.Request(id: id, call: call))
        let generation = process.generation
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (reply: CheckedContinuation<Reply, Never>) in
                let timeout = Task { [weak self] in
                    guard (try? await Task.sleep(for: bound)) != nil else { return }
                    await self?.unanswered(id, generation: generation, within: bound)
                }
                waiting[id] = Waiting(reply: reply, timeout: timeout)
                if Task.isCancelled { return cancel(id) }
                if !process.send(frame) {
                    process.child.signal(SIGKILL)  // gone or stuck: its end is read next
                }
            }
        } onCancel: {
            onQueue { $0.cancel(id) }
        }
    }

    /// A new request id (taken whether a helper runs or not).
    private func takeRequestID() -> UInt32 {
        defer { nextRequest &+= 1 }
        return nextRequest
    }

    /// Request `id` to the helper of `generation` was not answered within `bound`: that helper
    /// is stuck. Killed, and lost at once (this answer with it), so that a call asked again waits
    /// for the replacement rather than going to it.
    private func unanswered(_ id: UInt32, generation: UInt64, within bound: Duration) {
        guard waiting[id] != nil, let process, process.generation == generation else { return }
        process.child.signal(SIGKILL)
        lost(process, "it did not answer within \(bound)")
    }

    /// Returns once a helper runs again, or after `bound`, or at a cancel.
    private func helperReplaced(within bound: Duration) async {
        let key = nextAwaiting
        nextAwaiting += 1
        let timeout = Task { [weak self] in
            try? await Task.sleep(for: bound)
            await self?.stopAwaiting(key)
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (arrived: CheckedContinuation<Void, Never>) in
                guard process == nil, !shutDown else { return arrived.resume() }
                awaitingHelper[key] = arrived
            }
        } onCancel: {
            onQueue { $0.stopAwaiting(key) }
        }
        timeout.cancel()
    }

    private func stopAwaiting(_ key: UInt64) {
        awaitingHelper.removeValue(forKey: key)?.resume()
    }

    private func cancel(_ id: UInt32) {
        guard let entry = waiting.removeValue(forKey: id) else { return }
        entry.timeout.cancel()
        entry.reply.resume(returning: .cancelled)
    }

    /// Sends `call` without waiting for its answer (a dropped recording's close).
    func tell(_ call: AudioHelperProtocol.Call) {
        let id = takeRequestID()
        guard let process else { return }
        if !process.send(AudioHelperProtocol.frame(.request, json: AudioHelperProtocol.Request(id: id, call: call))) {
            process.child.signal(SIGKILL)
        }
    }

    /// Asks the helper to answer every helper-ping while any recording is open; one that does not
    /// answer in time is killed, which fails its recordings (`ask`'s bound).
    func keepHeartbeat() {
        guard !heartbeatRuns else { return }
        heartbeatRuns = true
        let heartbeat = bounds[.helperPing]
        Task { [weak self] in
            while true {
                try? await Task.sleep(for: heartbeat)
                guard let self, await self.recording() else { return }
                _ = await self.ask(.ping, within: heartbeat)
            }
        }
    }

    /// Whether any recording's samples are still taken; the heartbeat stops once none is.
    private func recording() -> Bool {
        let any = captures.values.contains { $0.chunks != nil }
        if !any { heartbeatRuns = false }
        return any
    }
}
