import Dispatch
import Glibc
import VoiceboxCore

/// Connecting, the SSIP handshake, losing the connection and reconnecting with backoff.
extension SpeechdCore {
    func attemptConnect() {
        dispatchPrecondition(condition: .onQueue(queue))
        switch phase {
        case .starting, .disconnected: break
        case .connected, .shutDown: return
        }
        guard !attemptInFlight else { return }
        retry?.cancel()
        retry = nil
        attemptInFlight = true
        lastAttemptStart = .now()
        generation += 1
        let attemptGeneration = generation
        let configuration = self.configuration
        connector.async {
            let result = SpeechdConnector.open(address: configuration.address, autospawn: configuration.autospawn)
            self.queue.async { self.opened(result, generation: attemptGeneration) }
        }
    }

    private func opened(_ result: Result<SSIPSocket.Opened, SynthesizerError>, generation attemptGeneration: UInt64) {
        guard case .success(let opened) = result else {
            if case .failure(let error) = result { attemptFinished(.failure(error)) }
            return
        }
        if case .shutDown = phase {
            attemptInFlight = false
            close(opened.descriptor)
            return
        }
        let connection = SSIPConnection(opened, queue: queue, timeout: configuration.replyTimeout)
        attempt = connection
        connection.onEvent = { [weak self] event in self?.handle(event, generation: attemptGeneration) }
        connection.onClose = { [weak self] reason in self?.closed(reason, generation: attemptGeneration) }
        handshake(connection, generation: attemptGeneration)
    }

    /// CLIENT_NAME and notifications (both required), then the server's defaults, all pipelined.
    private func handshake(_ connection: SSIPConnection, generation attemptGeneration: UInt64) {
        var refusal: String?
        var values: [String: String] = [:]
        let steps: [(line: [UInt8], key: String?)] = [
            (SpeechdConnector.clientNameCommand(client: configuration.clientName, component: "speech"), nil),
            (SSIPText.command("SET", "self", "NOTIFICATION", "all", "on"), nil),
            (SSIPText.command("GET", "OUTPUT_MODULE"), "module"),
            (SSIPText.command("GET", "LANGUAGE"), "language"),
            (SSIPText.command("GET", "VOLUME"), "volume"),
        ]
        for (index, step) in steps.enumerated() {
            let last = index == steps.count - 1
            connection.send(step.line) { [self] result in
                guard case .success(let reply) = result else { return } // onClose ends the attempt
                if let key = step.key {
                    if reply.isSuccess, let value = reply.lines.first { values[key] = value }
                } else if !reply.isSuccess && refusal == nil {
                    refusal = "speech-dispatcher refused the connection set-up (\(reply.code) \(reply.text))"
                }
                guard last, attempt === connection, generation == attemptGeneration else { return }
                if let refusal {
                    connection.close()
                    return attemptFinished(.failure(.unavailable(refusal)))
                }
                attemptFinished(.success(Link(connection: connection, generation: attemptGeneration,
                                              defaultModule: values["module"], defaultLanguage: values["language"],
                                              defaultVolume: values["volume"].flatMap { Int($0) })))
            }
        }
    }

    private func closed(_ reason: String, generation closedGeneration: UInt64) {
        if case .connected(let link) = phase, link.generation == closedGeneration {
            connectionLost(reason)
        } else if attemptInFlight, attempt != nil, generation == closedGeneration {
            attemptFinished(.failure(.unavailable(reason)))
        }
    }

    private func attemptFinished(_ result: Result<Link, SynthesizerError>) {
        attemptInFlight = false
        attempt = nil
        if case .shutDown = phase {
            if case .success(let link) = result { link.connection.close() }
            return
        }
        switch result {
        case .success(let link):
            phase = .connected(link)
            backoff = Self.initialBackoff
            continuation.yield(.available)
            let waiting = parked
            parked.removeAll()
            for (request, waiter) in waiting { submit(request, waiter: waiter) }
        case .failure(let error):
            let reason = Self.reason(of: error)
            if case .starting = phase {
                phase = .disconnected(reason: reason)
                continuation.yield(.unavailable(reason: reason))
                failWaiters(reason)
            } else {
                phase = .disconnected(reason: reason)
            }
            scheduleRetry()
        }
    }

    /// Every utterance ends with `.error` (a speak() still waiting throws instead), then
    /// `.unavailable`, then reconnection in the background.
    func connectionLost(_ reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .connected(let link) = phase else { return }
        phase = .disconnected(reason: reason)
        link.connection.close()
        dropUtterancesOfWaiters()
        failWaiters(reason)
        finishAll(.error)
        continuation.yield(.unavailable(reason: reason))
        scheduleRetry()
    }

    private func scheduleRetry() {
        retry?.cancel()
        let work = DispatchWorkItem { [weak self] in self?.attemptConnect() }
        retry = work
        queue.asyncAfter(deadline: .now() + backoff, execute: work)
        backoff = min(backoff * 2, Self.maximumBackoff)
    }

    /// speak() while disconnected: try now rather than at the next timer, unless we just tried.
    func retrySoonIfStale() {
        guard !attemptInFlight else { return }
        if let last = lastAttemptStart,
           DispatchTime.now().uptimeNanoseconds - last.uptimeNanoseconds < UInt64(Self.eagerRetryAge * 1e9) {
            return
        }
        attemptConnect()
    }
}
