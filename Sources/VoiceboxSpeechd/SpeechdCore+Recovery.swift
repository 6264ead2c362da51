import Dispatch
import Glibc
import VoiceboxCore

/// Bringing speech back after speech-dispatcher went away, stopped answering, or stopped speaking.
///
/// The utterance at the head (the one being spoken, or the one that would not begin) ends with
/// `.error` and the reason; the ones queued behind it are taken back and given again once a
/// connection is up, so they are spoken, not lost. speak() meanwhile queues (its caller is not held
/// up). A server that stopped answering or speaking is restarted when it runs as this user and
/// `Configuration.recovery` allows: stopped (TERM, then KILL after `timings.stopGrace`, 0.5 s, its
/// output modules too) and started again with its own command line and environment, restarts spaced
/// by a backoff (`timings.restartFirst`, 1 s, doubling to `timings.restartLimit`, 30 s). If no
/// connection comes back, everything still queued ends with `.error` and speak() fails at once until
/// one does.
extension SpeechdCore {
    /// Why a recovery started.
    enum Cause {
        /// Speech made no progress within the bound and the output module did not answer.
        case stalled(String)
        /// A command went unanswered past its deadline.
        case unanswered(String)
        /// The connection closed (the server exited or was killed).
        case closed(String)

        var reason: String {
            switch self {
            case .stalled(let reason), .unanswered(let reason), .closed(let reason): reason
            }
        }
    }

    struct Recovery {
        let reason: String
        /// Restart the server before connecting (it was found wedged).
        var restartFirst: Bool
        /// It has been restarted once in this recovery: a second failure gives up.
        var restarted = false
        /// Connections tried since the restart (see connectRetriesAfterRestart).
        var connectRetries = 0
    }

    /// Connection attempts after a restart (or, autospawning, after the server went away) before
    /// giving up: 1, 2, 3 and 4 times `timings.reconnectFirst` (0.25 s) apart.
    static let connectRetriesAfterRestart = 4

    func recover(_ cause: Cause) {
        guard case .connected(let link) = phase else { return }
        link.connection.close()
        stallCheck?.cancel()
        stallCheck = nil
        stallDeadline = nil
        stallProbing = false
        stallWait = timings.begin
        heartbeat?.cancel()
        heartbeat = nil
        let reason = cause.reason
        log("speech: \(reason); recovering")

        // The one being spoken when speech stopped ends with the reason: it may be what wedged the
        // server, and it cannot be resumed where it stopped. One that never began is given again
        // after the restart (another program's text may have frozen the server), but only once: at
        // the head of a second recovery in a row, or where nothing can be restarted, it ends too.
        let inEngine = utterances.values.filter(isInEngine).sorted { $0.sequence < $1.sequence }
        var victim = inEngine.first { if case .speaking = $0.stage { true } else { false } }?.request.id
        let canRestart = configuration.recovery == .restart
        if victim == nil, let head = inEngine.first {
            let id = head.request.id
            utterances[id]?.recoveries += 1
            let repeated = (utterances[id]?.recoveries ?? 0) >= 2
            let hopeless = if case .stalled = cause { !canRestart } else { false }
            if repeated || hopeless { victim = id }
        }
        // The rest is taken back; a speak() still waiting for its 225 is answered: it is queued here.
        let waiting = submissions.compactMap(\.waiter) + [activeSubmission?.waiter].compactMap { $0 }
        submissions.removeAll()
        activeSubmission = nil
        tracks.removeAll()
        orphans.removeAll()
        early.removeAll()
        speakingMessage = nil
        for id in utterances.keys where id != victim { utterances[id]?.stage = .held }
        if let victim { finish(victim, .error, failure: reason) }
        for waiter in waiting { waiter.resume() }

        let restart: Bool
        switch cause {
        case .stalled: restart = canRestart
        case .unanswered, .closed: restart = false  // a fresh connection tells first (see attemptFinished)
        }
        phase = .recovering(Recovery(reason: reason, restartFirst: restart))
        reconnectForRecovery()
    }

    /// Connects again, first restarting the server if the recovery says so (when the backoff allows).
    func reconnectForRecovery() {
        guard case .recovering(var recovery) = phase else { return }
        guard recovery.restartFirst, !recovery.restarted else { return attemptConnect() }
        let now = DispatchTime.now()
        if let last = lastRestart {
            let since = Double(now.uptimeNanoseconds - last.uptimeNanoseconds) / 1e9
            // A server that stayed up this long after its last restart gets the short backoff again.
            if since > timings.restartReset {
                restartBackoff = timings.restartFirst
            } else if since < restartBackoff {
                retry?.cancel()
                let work = DispatchWorkItem { [weak self] in self?.onQueue { $0.reconnectForRecovery() } }
                retry = work
                queue.asyncAfter(deadline: last + restartBackoff, execute: work)
                return
            }
        }
        recovery.restarted = true
        phase = .recovering(recovery)
        lastRestart = now
        restartBackoff = min(restartBackoff * 2, timings.restartLimit)
        attemptInFlight = true
        let (address, timings) = (configuration.address, timings)
        connector.async {
            let (outcome, unstarted) = Self.restartServer(address: address, timings: timings)
            self.queue.async {
                self.onQueue { core in
                    core.attemptInFlight = false
                    core.unstarted = unstarted
                    core.log("speech: \(outcome)")
                    core.attemptConnect()
                }
            }
        }
    }

    /// Stops the server behind `address` and starts it again (blocking; on `connector`). Says what it
    /// did, and returns the server if it did not start again.
    private static func restartServer(address configured: String?, timings: SpeechdTimings) -> (String, SpeechdServerProcess?) {
        guard case .success(let address) = SpeechdAddress.resolve(configured), case .unixSocket(let path) = address else {
            return ("speech-dispatcher listens on a network socket: it cannot be restarted from here", nil)
        }
        guard let server = SpeechdServerProcess.find(listeningOn: path) else {
            return ("no speech-dispatcher of this user listens on \(path): connecting again", nil)
        }
        let stopped = server.stop(grace: timings.stopGrace, exit: timings.exit)
        if let problem = server.relaunch(within: timings.start) {
            return ("stopped speech-dispatcher (pid \(server.pid)\(stopped ? "" : ", not all of it went")), but \(problem); "
                        + "it is started again before each connection attempt", server)
        }
        return ("restarted speech-dispatcher (was pid \(server.pid), \(server.modules.count) output modules)", nil)
    }

    /// Before a connection attempt (blocking; on `connector`): a server whose relaunch failed, or
    /// (autospawn) the one that went away, is started again with its own command line, unless
    /// something listens on its socket by now. Says what it did, if anything.
    static func startAgain(_ server: SpeechdServerProcess, address configured: String?, within start: Duration) -> String? {
        guard !SpeechdServerProcess.anyoneListens(address: configured) else { return nil }
        if let problem = server.relaunch(within: start) { return "speech-dispatcher still does not start: \(problem)" }
        return "started speech-dispatcher again"
    }

    /// speak() during a recovery: queued here, given to speech-dispatcher once it is back.
    func hold(_ original: SynthesisRequest, waiter: CheckedContinuation<Void, any Error>) {
        let request: SynthesisRequest
        do {
            request = try Self.checked(original)
        } catch {
            return waiter.resume(throwing: error)
        }
        guard utterances[request.id] == nil else {
            return waiter.resume(throwing: SynthesizerError.rejected("utterance \(request.id) is already queued"))
        }
        utterances[request.id] = Utterance(request: request, sequence: nextSequence, stage: .held)
        nextSequence += 1
        waiter.resume()
    }

    /// After a connection is up again: what was held for the recovery is given again, in order.
    func resubmitHeld() {
        guard !paused else { return }
        let held = utterances.values.filter { if case .held = $0.stage { true } else { false } }
            .sorted { $0.sequence < $1.sequence }
        for utterance in held { enqueueSubmission(of: utterance.request.id, waiter: nil) }
        pumpSubmissions()
    }

    /// The recovery did not bring speech-dispatcher back: everything queued ends with `.error`.
    func giveUpRecovery(_ reason: String) {
        log("speech: speech-dispatcher is not back: \(reason)")
        phase = .disconnected(reason: reason)
        failWaiters(reason)
        finishAll(.error, failure: reason)
        continuation.yield(.unavailable(reason: reason))
    }

    func log(_ message: String) {
        configuration.log?(message)
    }
}

