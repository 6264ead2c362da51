import Dispatch

/// A frozen speech-dispatcher (SIGSTOP, a wedged server) sends no more notices, and nothing else
/// asks it anything: the utterance it was speaking would wait for its end for ever, a `wait`
/// caller with it, and others would stay paused (measured before this existed: no SpeechFinished
/// in 30 s). So while anything is in the engine, a cheap query (GET VOLUME) goes out every
/// `timings.heartbeat` (3 s); its reply is bounded by the connection's timeout like every other, so a
/// server that stopped answering drops the connection and its utterances end with `.error` within
/// heartbeat + reply (5 s). Idle, or with everything held, nothing is sent.
extension SpeechdCore {
    /// Schedules the next beat unless one is scheduled (on `queue`).
    func startHeartbeat() {
        guard heartbeat == nil else { return }
        let beat = DispatchWorkItem { [weak self] in self?.onQueue { $0.beat() } }
        heartbeat = beat
        queue.asyncAfter(deadline: .now() + timings.heartbeat, execute: beat)
    }

    private func beat() {
        heartbeat = nil
        guard case .connected(let link) = phase, utterances.values.contains(where: isInEngine) else { return }
        link.connection.send(SSIPText.command("GET", "VOLUME")) { _ in }  // only its timeout matters
        startHeartbeat()
    }
}
