import CPulse
import Dispatch
import VoiceboxContract
import VoiceboxCore

/// Connecting, noticing the server go away, reconnecting with backoff, and the end.
/// Why not PA_CONTEXT_NOFAIL: libpulse then waits for the server only through D-Bus name tracking,
/// only when no server address is given, and never after a ready connection failed. A fresh
/// context per attempt, on a backoff timer, covers every case (and pipewire-pulse).
extension MixerConnection {
    func connect() {
        attempt += 1
        phase = .connecting
        let api = executor.api
        let properties = Self.proplist([PA_PROP_APPLICATION_NAME: settings.applicationName])
        defer { pa_proplist_free(properties) }
        guard let context = pa_context_new_with_proplist(api, settings.applicationName, properties) else {
            return connectionLost("cannot create a PulseAudio context")
        }
        self.context = context
        pa_context_set_state_callback(context, { context, user in
            let address = Int(bitPattern: context)
            MixerConnection.owner(user).fromCallback { $0.contextStateChanged(address) }
        }, selfPointer)
        pa_context_set_subscribe_callback(context, { _, type, index, user in
            MixerConnection.owner(user).fromCallback { $0.serverEvent(type, index) }
        }, selfPointer)
        // No autospawn: a missing server is waited for, not started by us.
        guard pa_context_connect(context, settings.server, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else {
            // The state callback may have run already and dropped the context: read ours, not the local.
            if let context = self.context { connectionLost(Self.describe(pa_context_errno(context))) }
            return
        }
        // A server that accepts the connection but never answers must not leave us connecting forever.
        let thisAttempt = attempt
        let timeout = settings.connectTimeout
        executor.queue.asyncAfter(deadline: .now() + timeout.dispatchInterval) { [weak self] in
            self?.now { connection in
                guard connection.phase == .connecting, connection.attempt == thisAttempt else { return }
                connection.connectionLost("no answer from the sound server within \(timeout)")
            }
        }
    }

    /// `address`: the context it is about (a pointer's bits: ours, or one dropped meanwhile).
    func contextStateChanged(_ address: Int) {
        guard let context, Int(bitPattern: context) == address else { return }
        let state = pa_context_get_state(context)
        if state == PA_CONTEXT_READY {
            subscribe(context)
        } else if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
            connectionLost(Self.describe(pa_context_errno(context)))
        }
    }

    /// Ready only once subscribed: nothing that happens after `.serverReady` is missed.
    func subscribe(_ context: OpaquePointer) {
        let mask = PA_SUBSCRIPTION_MASK_SINK_INPUT.rawValue | PA_SUBSCRIPTION_MASK_SOURCE_OUTPUT.rawValue
            | PA_SUBSCRIPTION_MASK_MODULE.rawValue | PA_SUBSCRIPTION_MASK_SERVER.rawValue
        let operation = pa_context_subscribe(context, pa_subscription_mask_t(rawValue: mask), { context, success, user in
            let address = Int(bitPattern: context)
            MixerConnection.owner(user).fromCallback { $0.subscribed(address, success != 0) }
        }, selfPointer)
        guard let operation else { return connectionLost(Self.describe(pa_context_errno(context))) }
        pa_operation_unref(operation)
    }

    func subscribed(_ address: Int, _ success: Bool) {
        guard let context, Int(bitPattern: context) == address, phase == .connecting else { return }
        guard success else { return connectionLost("the server refused the subscription: \(Self.describe(pa_context_errno(context)))") }
        phase = .ready
        backoff.reset()
        lostReported = false
        subscribeToMemory(context)
        eventSink.yield(.serverReady)
        for waiter in readyWaiters.values { waiter.resume() }
        readyWaiters = [:]
    }

    /// The connection failed or was lost: report it (once per outage), drop the
    /// context with everything that hung on it, and try again after the backoff delay.
    func connectionLost(_ reason: String) {
        guard phase == .connecting || phase == .ready else { return }
        dropContext(reason)
        lastFailure = reason
        if !lostReported {
            lostReported = true
            eventSink.yield(.serverLost(reason: reason))
        }
        for waiter in readyWaiters.values { waiter.resume(throwing: MixerError.unavailable(reason)) }
        readyWaiters = [:]
        phase = .waitingToRetry
        let thisAttempt = attempt
        executor.queue.asyncAfter(deadline: .now() + backoff.take().dispatchInterval) { [weak self] in
            self?.now { connection in
                if connection.phase == .waitingToRetry, connection.attempt == thisAttempt { connection.connect() }
            }
        }
    }

    /// Answers every request still waiting on this context, then closes it.
    func dropContext(_ reason: String) {
        for request in pending.values { request.cancel(with: .unavailable(reason)) }
        pending = [:]
        endTrigger(failure: .unavailable(reason))
        cachedInfo = nil
        infoGeneration += 1
        if let context {
            pa_context_set_state_callback(context, nil, nil)
            pa_context_set_subscribe_callback(context, nil, nil)
            pa_ext_stream_restore_set_subscribe_cb(context, nil, nil)
            pa_context_disconnect(context)
            pa_context_unref(context)
            self.context = nil
        }
    }

    /// The end: answers every waiter, finishes `events`, closes the connection and
    /// stops the mainloop off its own thread (stopping joins it).
    func end() {
        guard phase != .ended else { return }
        dropContext("the mixer was shut down")
        phase = .ended
        for waiter in readyWaiters.values { waiter.resume(throwing: MixerError.unavailable("the mixer was shut down")) }
        readyWaiters = [:]
        eventSink.finish()
        stopMainloop(thenRelease: selfRetain)
        selfRetain = nil
    }

    /// Returns once connected and subscribed. Waits (at most `connectTimeout`) only while an
    /// attempt is under way; while waiting to retry, the server is known to be away: no wait.
    func waitUntilReady() async throws {
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
            switch phase {
            case .ready: waiter.resume()
            case .waitingToRetry: waiter.resume(throwing: MixerError.unavailable(lastFailure))
            case .ended: waiter.resume(throwing: MixerError.unavailable("the mixer was shut down"))
            case .connecting:
                let id = makeID()
                readyWaiters[id] = waiter
                let timeout = settings.connectTimeout
                executor.queue.asyncAfter(deadline: .now() + timeout.dispatchInterval) { [weak self] in
                    self?.now { connection in
                        connection.readyWaiters.removeValue(forKey: id)?.resume(throwing: MixerError.unavailable(
                            "not connected to the sound server within \(timeout)"))
                    }
                }
            }
        }
    }
}
