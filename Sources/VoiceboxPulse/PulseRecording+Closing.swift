import CPulse
import Dispatch
import VoiceboxContract
import VoiceboxCore

/// Releasing: `close` (waits for the server), `closeSoon` (does not) and `end`, the one way out.
extension PulseRecording {
    /// Releases the microphone; returns once the server confirmed it (or after `closeTimeout`).
    func close() async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            guard phase != .ended else { return waiter.resume() }
            closeWaiters.append(waiter)
            beginClose()
        }
    }

    /// Starts `close` without waiting; for places that cannot wait (deinit, stream termination).
    nonisolated func closeSoon() {
        soon { $0.beginClose() }
    }

    func beginClose() {
        switch phase {
        case .idle, .connecting: return end(.closed)
        case .closing, .ended: return
        case .recording: break
        }
        phase = .closing
        // The stream turns TERMINATED only when the server answers this request, by which time
        // the source-output is gone: that is what makes `close` a promise, not a hope.
        guard let stream, pa_stream_disconnect(stream) >= 0 else { return end(.closed) }
        executor.queue.asyncAfter(deadline: .now() + settings.closeTimeout.dispatchInterval) { [weak self] in
            self?.now { recording in if recording.phase == .closing { recording.end(.closed) } }
        }
    }

    /// Ends the recording, once: answers every waiter, finishes `chunks`, drops the server objects
    /// (closing the connection) and stops the mainloop off its own thread and outside the lock.
    func end(_ reason: EndReason) {
        guard phase != .ended else { return }
        phase = .ended
        if case .failed(let error) = reason { failure = error }
        chunkSink.finish()
        switch reason {
        case .closed: openWaiter?.resume(throwing: CaptureError.failed("closed while opening"))
        case .failed(let error): openWaiter?.resume(throwing: error)
        case .cancelled: openWaiter?.resume(throwing: CancellationError())
        }
        openWaiter = nil
        for waiter in closeWaiters { waiter.resume() }
        closeWaiters = []
        if let stream {
            pa_stream_set_state_callback(stream, nil, nil)
            pa_stream_set_read_callback(stream, nil, nil)
            pa_stream_unref(stream)
            self.stream = nil
        }
        if let context {
            // Closing the connection also makes the server drop a stream we have not released.
            pa_context_set_state_callback(context, nil, nil)
            pa_context_disconnect(context)
            pa_context_unref(context)
            self.context = nil
        }
        stopMainloop(thenRelease: selfRetain)
        selfRetain = nil
    }
}
