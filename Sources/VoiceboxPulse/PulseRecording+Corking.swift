import CPulse

/// Corking: the recording is held (the server stops sending audio, the microphone stays ours)
/// while a call has the audio, and goes on afterwards.
extension PulseRecording {
    /// Asks the server to cork or uncork the stream; audio stops or resumes within a fragment.
    /// Not waited for: the server applies requests in order, and a later close still works.
    func setCorked(_ corked: Bool) {
        guard phase == .recording, let stream else { return }
        if let operation = pa_stream_cork(stream, corked ? 1 : 0, nil, nil) { pa_operation_unref(operation) }
    }
}
