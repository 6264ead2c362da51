import Dispatch
import Glibc
import VoiceboxCore

/// Connecting, the SSIP handshake, losing the connection and reconnecting with backoff.
extension SpeechdCore {
    func attemptConnect() {
        switch phase {
        case .starting, .disconnected, .recovering: break
        case .connected, .shutDown: return
        }
        guard !attemptInFlight else { return }
        retry?.cancel()
        retry = nil
        attemptInFlight = true
        lastAttemptStart = .now()
        generation += 1
        let attemptGeneration = generation
        let (configuration, start) = (self.configuration, timings.start)
        // A server we stopped that did not start again, or (autospawn) the one that went away.
        let startable = unstarted ?? (configuration.autospawn ? knownServer : nil)
        connector.async {
            let started = startable.flatMap { Self.startAgain($0, address: configuration.address, within: start) }
            let result = SpeechdConnector.open(address: configuration.address, spawnWithin: configuration.autospawn ? start : nil)
            // Found before the connection counts as up, so a server that dies right after it (even
            // before the first Speak is answered) is already known and can be started again. Not
            // found is no news: a killed server's listening socket outlives its connections for a
            // moment, so a connection can be taken and then reset with nobody left to find, and the
            // server known before must stay known, or it is never started again (seen in CI).
            let noteServer = configuration.autospawn && (try? result.get()) != nil
            let server = noteServer ? SpeechdServerProcess.find(address: configuration.address) : nil
            self.queue.async {
                self.onQueue { core in
                    if let started { core.log("speech: \(started)") }
                    if let server { core.knownServer = server }
                    core.opened(result, generation: attemptGeneration)
                }
            }
        }
    }

    private func opened(_ result: Result<SSIPSocket.Opened, SynthesizerError>, generation attemptGeneration: UInt64) {
        guard case .success(let opened) = result else {
            if case .failure(let error) = result { attemptFinished(.failure(error), unanswered: false) }
            return
        }
        if case .shutDown = phase {
            attemptInFlight = false
            close(opened.descriptor)
            return
        }
        let connection = SSIPConnection(opened, queue: queue, timeout: timings.reply) { [weak self] event in
            self?.onQueue { $0.socketEvent(event, generation: attemptGeneration) }
        }
        attempt = connection
        connection.onEvent = { [weak self] event in self?.onQueue { $0.handle(event, generation: attemptGeneration) } }
        connection.onClose = { [weak self, unowned connection] reason in
            let unanswered = connection.endedUnanswered
            self?.onQueue { $0.closed(reason, unanswered: unanswered, generation: attemptGeneration) }
        }
        handshake(connection, generation: attemptGeneration)
    }

    /// Readiness of the socket of connection `eventGeneration`: read or written by that
    /// connection, here in the actor, if it is still ours (one dropped stops watching).
    private func socketEvent(_ event: WatchedSocket.Event, generation eventGeneration: UInt64) {
        if case .connected(let link) = phase, link.generation == eventGeneration {
            link.connection.handle(event)
        } else if let attempt, generation == eventGeneration {
            attempt.handle(event)
        }
    }

    /// CLIENT_NAME and notifications (both required), then the server's defaults, all pipelined.
    private func handshake(_ connection: SSIPConnection, generation attemptGeneration: UInt64) {
        handshakeAnswers = HandshakeAnswers()
        let steps: [(line: [UInt8], key: String?)] = [
            (SpeechdConnector.clientNameCommand(client: configuration.clientName, component: "speech"), nil),
            (SSIPText.command("SET", "self", "NOTIFICATION", "all", "on"), nil),
            (SSIPText.command("GET", "OUTPUT_MODULE"), "module"),
            (SSIPText.command("GET", "LANGUAGE"), "language"),
            (SSIPText.command("GET", "VOLUME"), "volume"),
        ]
        for (index, step) in steps.enumerated() {
            let last = index == steps.count - 1
            let sent = ObjectIdentifier(connection)  // the connection stays with its owner
            connection.send(step.line) { [self] result in
                onQueue { core in
                    core.handshakeAnswered(result, key: step.key, last: last, on: sent, generation: attemptGeneration)
                }
            }
        }
    }

    private func handshakeAnswered(_ result: Result<SSIPReply, SynthesizerError>, key: String?, last: Bool,
                                   on sent: ObjectIdentifier, generation attemptGeneration: UInt64) {
        guard case .success(let reply) = result, let connection = attempt, ObjectIdentifier(connection) == sent,
              generation == attemptGeneration else {
            return // onClose ends the attempt
        }
        if let key {
            if reply.isSuccess, let value = reply.lines.first { handshakeAnswers.values[key] = value }
        } else if !reply.isSuccess && handshakeAnswers.refusal == nil {
            handshakeAnswers.refusal = "speech-dispatcher refused the connection set-up (\(reply.code) \(reply.text))"
        }
        guard last else { return }
        let answers = handshakeAnswers
        if let refusal = answers.refusal {
            connection.close()
            return attemptFinished(.failure(.unavailable(refusal)), unanswered: false)
        }
        attemptFinished(.success(Link(connection: connection, generation: attemptGeneration,
                                      defaultModule: answers.values["module"], defaultLanguage: answers.values["language"],
                                      defaultVolume: answers.values["volume"].flatMap { Int($0) })), unanswered: false)
    }

    private func closed(_ reason: String, unanswered: Bool, generation closedGeneration: UInt64) {
        if case .connected(let link) = phase, link.generation == closedGeneration {
            connectionLost(reason, unanswered: unanswered)
        } else if attemptInFlight, attempt != nil, generation == closedGeneration {
            attemptFinished(.failure(.unavailable(reason)), unanswered: unanswered)
        }
    }

    /// `unanswered`: the attempt failed because the server did not answer its handshake in time.
    private func attemptFinished(_ result: Result<Link, SynthesizerError>, unanswered: Bool) {
        attemptInFlight = false
        attempt = nil
        if case .shutDown = phase {
            if case .success(let link) = result { link.connection.close() }
            return
        }
        switch result {
        case .success(let link):
            let recovered = if case .recovering = phase { true } else { false }
            phase = .connected(link)
            unstarted = nil
            backoff = timings.reconnectFirst
            continuation.yield(.available)
            if recovered { log("speech: speech-dispatcher answers again") }
            resubmitHeld()
            let waiting = parked
            parked.removeAll()
            for (request, waiter) in waiting { submit(request, waiter: waiter) }
        case .failure(let error):
            let reason = Self.reason(of: error)
            switch phase {
            case .starting:
                phase = .disconnected(reason: reason)
                continuation.yield(.unavailable(reason: reason))
                failWaiters(reason)
            case .recovering(var recovery):
                // A server that answers no fresh connection either is wedged, not slow: restart it.
                if unanswered, configuration.recovery == .restart, !recovery.restarted {
                    recovery.restartFirst = true
                    phase = .recovering(recovery)
                    return reconnectForRecovery()
                }
                // A server just restarted may take a moment to listen, and one that just died may
                // still take a connection it never answers (autospawn then starts it again at the
                // next try): a few more tries, 10 times reconnectFirst (2.5 s) in all.
                let startable = recovery.restarted || (configuration.autospawn && knownServer != nil)
                if startable, recovery.connectRetries < Self.connectRetriesAfterRestart {
                    recovery.connectRetries += 1
                    phase = .recovering(recovery)
                    retry?.cancel()
                    let work = DispatchWorkItem { [weak self] in self?.onQueue { $0.attemptConnect() } }
                    retry = work
                    return queue.asyncAfter(deadline: .now() + timings.reconnectFirst * Double(recovery.connectRetries), execute: work)
                }
                giveUpRecovery("\(recovery.reason); then \(reason)")
            default:
                phase = .disconnected(reason: reason)
            }
            scheduleRetry()
        }
    }

    /// The connection ended: recovery takes the utterances in hand (see SpeechdCore+Recovery).
    func connectionLost(_ reason: String, unanswered: Bool) {
        recover(unanswered ? .unanswered(reason) : .closed(reason))
    }

    private func scheduleRetry() {
        retry?.cancel()
        let work = DispatchWorkItem { [weak self] in self?.onQueue { $0.attemptConnect() } }
        retry = work
        queue.asyncAfter(deadline: .now() + backoff, execute: work)
        backoff = min(backoff * 2, timings.reconnectLimit)
    }

    /// speak() while disconnected: try now rather than at the next timer, unless we just tried (within
    /// `timings.eagerRetry`).
    func retrySoonIfStale() {
        guard !attemptInFlight else { return }
        if let last = lastAttemptStart,
           DispatchTime.now().uptimeNanoseconds - last.uptimeNanoseconds < UInt64(timings.eagerRetry * 1e9) {
            return
        }
        attemptConnect()
    }
}

extension SpeechdCore {
    /// What went wrong, in words: for the log, and for a caller told why.
    static func reason(of error: SynthesizerError) -> String {
        switch error {
        case .unavailable(let reason), .rejected(let reason): reason
        }
    }
}
