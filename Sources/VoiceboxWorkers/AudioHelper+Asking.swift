import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxLock

/// Requests to the helper: each bounded (helper-answer, or the bound it names), and a heartbeat
/// while a recording is open.
extension AudioHelper {
    /// Sends `call` and waits for its answer, at most `bound` (helper-answer unless given); a
    /// helper that does not answer by then is killed (which also hangs up its server connections)
    /// and replaced. A cancelled task stops waiting at once.
    func ask(_ call: AudioHelperProtocol.Call, within bound: Duration? = nil) async -> Reply {
        let bound = bound ?? bounds[.helperAnswer]
        let wait = state.withLock { state -> Duration? in
            guard state.process == nil, !state.shutDown else { return nil }
            return state.startFailed ? bounds[.helperStartFailed] : bounds[.helperReplacement]
        }
        if let wait { await helperReplaced(within: wait) }
        let (process, id, lastEnd) = takeRequestID()
        guard let process else { return .unreachable(lastEnd) }
        let frame = AudioHelperProtocol.frame(.request, json: AudioHelperProtocol.Request(id: id, call: call))
        return await withTaskCancellationHandler {
            await withHandOver { (reply: HandOver<Reply>) in
                let timeout = Task { [weak self] in
                    guard (try? await Task.sleep(for: bound)) != nil, let self else { return }
                    guard self.state.withLock({ $0.waiting[id] != nil }) else { return }
                    // Stuck: killed, and lost at once (this answer with it), so that a call asked
                    // again waits for the replacement rather than going to it.
                    process.child.signal(SIGKILL)
                    self.lost(process, "it did not answer within \(bound)")
                }
                let registered = state.withLock { state -> Bool in
                    guard state.process === process else { return false }
                    state.waiting[id] = Waiting(reply: reply, timeout: timeout)
                    return true
                }
                guard registered else {
                    timeout.cancel()
                    return reply.resume(returning: .unreachable(lastEnd))
                }
                if Task.isCancelled { return cancel(id) }
                if !process.send(frame) {
                    process.child.signal(SIGKILL)  // gone or stuck: its reader sees the end
                }
            }
        } onCancel: {
            cancel(id)
        }
    }

    /// The helper running now (nil: why none does), and a new request id.
    private func takeRequestID() -> (process: Process?, id: UInt32, lastEnd: String) {
        state.withLock { state in
            defer { state.nextRequest &+= 1 }
            return (state.process, state.nextRequest, state.lastEnd)
        }
    }

    /// Returns once a helper runs again, or after `bound`, or at a cancel.
    private func helperReplaced(within bound: Duration) async {
        let key = state.withLock { state in
            defer { state.nextAwaiting += 1 }
            return state.nextAwaiting
        }
        let resumeIfWaiting: @Sendable () -> Void = { [state] in state.withLock { $0.awaitingHelper.removeValue(forKey: key) }?.resume() }
        let timeout = Task {
            try? await Task.sleep(for: bound)
            resumeIfWaiting()
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (arrived: CheckedContinuation<Void, Never>) in
                let waits = state.withLock { state -> Bool in
                    guard state.process == nil, !state.shutDown else { return false }
                    state.awaitingHelper[key] = arrived
                    return true
                }
                if !waits { arrived.resume() }
            }
        } onCancel: {
            resumeIfWaiting()
        }
        timeout.cancel()
    }

    private func cancel(_ id: UInt32) {
        guard let entry = state.withLock({ $0.waiting.removeValue(forKey: id) }) else { return }
        entry.timeout.cancel()
        entry.reply.resume(returning: .cancelled)
    }

    /// Sends `call` without waiting for its answer (a dropped recording's close).
    func tell(_ call: AudioHelperProtocol.Call) {
        let (process, id, _) = takeRequestID()
        guard let process else { return }
        if !process.send(AudioHelperProtocol.frame(.request, json: AudioHelperProtocol.Request(id: id, call: call))) {
            process.child.signal(SIGKILL)
        }
    }

    /// Asks the helper to answer every helper-ping while any recording is open; one that does not
    /// answer in time is killed, which fails its recordings (`ask`'s bound).
    func keepHeartbeat() {
        guard state.withLock({ state -> Bool in
            defer { state.heartbeatRuns = true }
            return !state.heartbeatRuns
        }) else { return }
        let heartbeat = bounds[.helperPing]
        Task { [weak self] in
            while true {
                try? await Task.sleep(for: heartbeat)
                guard let self, self.state.withLock({ state -> Bool in
                    if state.captures.isEmpty { state.heartbeatRuns = false }
                    return !state.captures.isEmpty
                }) else { return }
                _ = await self.ask(.ping, within: heartbeat)
            }
        }
    }
}
