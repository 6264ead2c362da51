import CPulse
import Dispatch
import VoiceboxCore

/// Connecting: context first, then the record stream; `start` returns once the stream is READY.
extension PulseRecording {
    /// Connects and starts recording; returns once the server has created the record stream.
    func start() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Void, any Error>) in
                guard phase == .idle else { return waiter.resume(throwing: CancellationError()) }
                openWaiter = waiter
                connect()
            }
        } onCancel: {
            // Only an open still under way: a recording that opened just before must survive.
            soon { recording in
                if recording.phase == .idle || recording.phase == .connecting { recording.end(.cancelled) }
            }
        }
    }

    func connect() {
        let api = executor.api
        let properties = Self.proplist([PA_PROP_APPLICATION_NAME: settings.applicationName])
        defer { pa_proplist_free(properties) }
        guard let context = pa_context_new_with_proplist(api, settings.applicationName, properties) else {
            return end(.failed(.failed("cannot create a PulseAudio context")))
        }
        self.context = context
        let retained = Unmanaged.passRetained(self)
        selfRetain = retained
        pa_context_set_state_callback(context, { _, user in
            PulseRecording.owner(user).fromCallback { $0.contextStateChanged() }
        }, retained.toOpaque())
        phase = .connecting
        // No autospawn: a missing server is an answer (serverUnavailable), not something to start.
        guard pa_context_connect(context, settings.server, PA_CONTEXT_NOAUTOSPAWN, nil) >= 0 else {
            return endWithLastError()
        }
        guard executor.start() else {
            return end(.failed(.failed("cannot start the PulseAudio mainloop thread")))
        }
        // A server that accepts the connection but never answers must not hang `open` forever.
        let timeout = settings.openTimeout
        executor.queue.asyncAfter(deadline: .now() + timeout.dispatchInterval) { [weak self] in
            self?.now { recording in
                guard recording.phase == .connecting else { return }
                recording.end(.failed(.serverUnavailable("no answer from the sound server within \(timeout)")))
            }
        }
    }

    /// Called once the context is ready.
    func connectStream() {
        guard let context, let retained = selfRetain else { return }
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: Self.sampleRate, channels: 1)
        let properties = Self.proplist([
            PA_PROP_MEDIA_NAME: settings.mediaName,
            PA_PROP_MEDIA_ROLE: settings.mediaRole,
        ])
        defer { pa_proplist_free(properties) }
        guard let stream = pa_stream_new_with_proplist(context, settings.mediaName, &spec, nil, properties) else {
            return endWithLastError()
        }
        self.stream = stream
        pa_stream_set_state_callback(stream, { _, user in
            PulseRecording.owner(user).fromCallback { $0.streamStateChanged() }
        }, retained.toOpaque())
        pa_stream_set_read_callback(stream, { _, _, user in
            PulseRecording.owner(user).fromCallback { $0.readAvailable() }
        }, retained.toOpaque())

        // (UInt32)-1 means "server default"; the playback-only fields stay at that.
        // fragsize + ADJUST_LATENCY make the server deliver in small pieces instead of its
        // default of about two seconds.
        var attributes = pa_buffer_attr(maxlength: .max, tlength: .max, prebuf: .max, minreq: .max,
                                        fragsize: Self.fragmentBytes)
        var flags = PA_STREAM_ADJUST_LATENCY.rawValue
        // A microphone chosen by name must not silently turn into another one when it goes away.
        if settings.source != nil { flags |= PA_STREAM_DONT_MOVE.rawValue }
        guard pa_stream_connect_record(stream, settings.source, &attributes, pa_stream_flags_t(flags)) >= 0 else {
            return endWithLastError()
        }
    }
}
