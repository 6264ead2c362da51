import CPulse
import Dispatch
import Glibc
import VoiceboxContract
import VoiceboxCore

/// The silent playback stream whose `media.role` sets module-role-cork off, while it plays.
/// Lives on the mixer's context and ends with it (a reconnect does not bring it back: the
/// policy sees `.serverReady` and starts it again if it still wants it).
struct CorkTrigger {
    static let sampleRate: UInt32 = 16_000
    /// 40 ms of buffer: the server asks for more about every 20 ms. Enough for silence,
    /// small enough that the stream is "playing" (and corks others) as soon as it is connected.
    static let targetBytes: UInt32 = sampleRate / 25 * 2

    let stream: OpaquePointer
    /// Tells this trigger from a later one in timers (which must not hold the C pointer).
    let id: UInt64
    let role: String
    /// The sink input's index, once the server created it.
    var index: UInt32?
    /// Callers of `startCorkTrigger` waiting for `index` (two may ask for the same role at once).
    var startWaiters: [CheckedContinuation<UInt32, any Error>]
    var stopWaiters: [CheckedContinuation<Void, Never>] = []
    var stopping = false
}

extension MixerConnection {
    func startCorkTrigger(role: String) async throws -> UInt32 {
        try await waitUntilReady()
        return try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<UInt32, any Error>) in
            guard phase == .ready, let context else { return waiter.resume(throwing: MixerError.unavailable(lastFailure)) }
            if let trigger, trigger.role == role, !trigger.stopping {
                guard let index = trigger.index else { return self.trigger!.startWaiters.append(waiter) }
                return waiter.resume(returning: index)
            }
            // Another role (or one stopping): it makes way, without waiting.
            endTrigger(failure: .failed("replaced by a cork trigger with role \(role)"))
            openTrigger(context, role: role, waiter: waiter)
        }
    }

    /// Returns once the server removed the trigger stream (and so uncorked what it had corked),
    /// or after `requestTimeout`.
    func stopCorkTrigger() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            guard trigger != nil else { return waiter.resume() }
            trigger!.stopWaiters.append(waiter)
            guard !trigger!.stopping else { return }
            trigger!.stopping = true
            let id = trigger!.id
            // TERMINATED comes only with the server's answer, when the sink input is gone.
            guard pa_stream_disconnect(trigger!.stream) >= 0 else { return endTrigger(failure: .failed("stopped")) }
            executor.queue.asyncAfter(deadline: .now() + settings.requestTimeout.dispatchInterval) { [weak self] in
                self?.now { connection in
                    if connection.trigger?.id == id { connection.endTrigger(failure: .failed("stopped")) }
                }
            }
        }
    }

    private func openTrigger(_ context: OpaquePointer, role: String, waiter: CheckedContinuation<UInt32, any Error>) {
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: CorkTrigger.sampleRate, channels: 1)
        let properties = Self.proplist([
            PA_PROP_MEDIA_ROLE: role,
            PA_PROP_APPLICATION_NAME: "Voicebox",
            PA_PROP_MEDIA_NAME: "Voicebox session",
        ])
        defer { pa_proplist_free(properties) }
        guard let stream = pa_stream_new_with_proplist(context, "Voicebox session", &spec, nil, properties) else {
            return waiter.resume(throwing: MixerError.failed("cork trigger: \(Self.describe(pa_context_errno(context)))"))
        }
        let id = makeID()
        trigger = CorkTrigger(stream: stream, id: id, role: role, startWaiters: [waiter])
        pa_stream_set_state_callback(stream, { stream, user in
            let address = Int(bitPattern: stream)
            MixerConnection.owner(user).fromCallback { $0.triggerStateChanged(address) }
        }, selfPointer)
        // Needs nothing of ours: it only fills what the server asks for with zeros.
        pa_stream_set_write_callback(stream, { stream, bytes, _ in
            MixerConnection.writeSilence(stream, bytes)
        }, nil)
        // (UInt32)-1 is "server default"; prebuf at its default starts playback once tlength is there.
        var attributes = pa_buffer_attr(maxlength: .max, tlength: CorkTrigger.targetBytes, prebuf: .max, minreq: .max, fragsize: .max)
        guard pa_stream_connect_playback(stream, nil, &attributes, PA_STREAM_ADJUST_LATENCY, nil, nil) >= 0 else {
            return endTrigger(failure: .failed("cork trigger: \(Self.describe(pa_context_errno(context)))"))
        }
        let timeout = settings.requestTimeout
        executor.queue.asyncAfter(deadline: .now() + timeout.dispatchInterval) { [weak self] in
            self?.now { connection in
                guard let trigger = connection.trigger, trigger.id == id, trigger.index == nil else { return }
                connection.endTrigger(failure: .unavailable("cork trigger: not playing within \(timeout)"))
            }
        }
    }

    /// (A libpulse callback.)
    func triggerStateChanged(_ address: Int) {
        guard let stream = trigger?.stream, Int(bitPattern: stream) == address else { return }
        let state = pa_stream_get_state(stream)
        if state == PA_STREAM_READY {
            let index = pa_stream_get_index(stream)
            trigger!.index = index
            for waiter in trigger!.startWaiters { waiter.resume(returning: index) }
            trigger!.startWaiters = []
        } else if state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED {
            let reason = context.map { Self.describe(pa_context_errno($0)) } ?? "the connection ended"
            endTrigger(failure: .failed("cork trigger: \(reason)"))
        }
    }

    /// Drops the trigger stream (the server removes it if it has not already) and
    /// answers whoever waits on it: a start still waiting gets `failure`.
    func endTrigger(failure: MixerError) {
        guard let trigger else { return }
        self.trigger = nil
        pa_stream_set_state_callback(trigger.stream, nil, nil)
        pa_stream_set_write_callback(trigger.stream, nil, nil)
        if pa_stream_get_state(trigger.stream) == PA_STREAM_READY || pa_stream_get_state(trigger.stream) == PA_STREAM_CREATING {
            pa_stream_disconnect(trigger.stream)
        }
        pa_stream_unref(trigger.stream)
        for waiter in trigger.startWaiters { waiter.resume(throwing: failure) }
        for waiter in trigger.stopWaiters { waiter.resume() }
    }

    /// (A libpulse callback.) Zeros straight into the server's buffer: no copy, no state.
    nonisolated static func writeSilence(_ stream: OpaquePointer?, _ bytes: Int) {
        guard let stream else { return }
        var remaining = bytes
        while remaining > 0 {
            var data: UnsafeMutableRawPointer?
            var size = remaining
            guard pa_stream_begin_write(stream, &data, &size) >= 0, let data, size > 0 else { return }
            memset(data, 0, size)
            guard pa_stream_write(stream, data, size, nil, 0, PA_SEEK_RELATIVE) >= 0 else { return }
            remaining -= size
        }
    }
}
