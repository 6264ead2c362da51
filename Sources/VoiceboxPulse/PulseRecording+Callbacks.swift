import CPulse
import VoiceboxContract
import VoiceboxCore

/// What libpulse calls, on the mainloop thread with the mainloop lock held (entered through
/// `fromCallback`). Each does the minimum and returns: no waiting here.
extension PulseRecording {
    func contextStateChanged() {
        guard let context else { return }
        let state = pa_context_get_state(context)
        if state == PA_CONTEXT_READY {
            if phase == .connecting { connectStream() }
        } else if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
            // Refused at connect, or the server went away mid-recording: either way it is gone.
            // (If we were closing anyway, the microphone is released all the same: no failure.)
            let code = pa_context_errno(context)
            end(phase == .closing ? .closed : .failed(.serverUnavailable(Self.describe(code))))
        }
    }

    func streamStateChanged() {
        guard let stream else { return }
        let state = pa_stream_get_state(stream)
        if state == PA_STREAM_READY {
            guard phase == .connecting else { return }
            phase = .recording
            serverIndex = pa_stream_get_index(stream)
            openWaiter?.resume()
            openWaiter = nil
        } else if state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED {
            // While closing: the server has confirmed our disconnect, the source-output is gone.
            // Otherwise refused at connect (e.g. no such source) or killed by the server later
            // (e.g. its source was removed while we had asked not to be moved).
            if phase == .closing { end(.closed) } else { endWithLastError() }
        }
    }

    /// Takes every fragment the server has delivered. Fragments may end mid-sample and may be
    /// holes (no data, only a length): `SampleAssembler` deals with both.
    func readAvailable() {
        guard let stream else { return }
        while true {
            var data: UnsafeRawPointer?
            var length = 0
            guard pa_stream_peek(stream, &data, &length) >= 0 else {
                return endWithLastError()
            }
            if length == 0 { return }  // Queue empty; pa_stream_drop must not be called.
            let chunks: [[Int16]]
            if let data {
                chunks = assembler.append(UnsafeRawBufferPointer(start: data, count: length))
            } else {
                assembler.skip(byteCount: length)
                chunks = []
            }
            pa_stream_drop(stream)
            // Audio still arriving while the disconnect is under way is nobody's any more.
            if phase == .recording {
                for chunk in chunks { chunkSink.yield(chunk) }
            }
        }
    }

    /// libpulse's text for an error code; `pa_strerror` gives NULL for codes it does not know.
    nonisolated static func describe(_ code: Int32) -> String {
        pa_strerror(code).map { String(cString: $0) } ?? "PulseAudio error \(code)"
    }

    /// Maps a libpulse error code to what the core distinguishes.
    nonisolated static func error(code: Int32, source: String?) -> CaptureError {
        let text = describe(code)
        switch pa_error_code_t(UInt32(bitPattern: code)) {
        case PA_ERR_NOENTITY:
            return .noMicrophone(source.map { "no source named \"\($0)\": \(text)" } ?? "no default source: \(text)")
        case PA_ERR_KILLED:
            return .noMicrophone("the sound server stopped the recording (source removed?): \(text)")
        case PA_ERR_CONNECTIONREFUSED, PA_ERR_CONNECTIONTERMINATED, PA_ERR_INVALIDSERVER, PA_ERR_TIMEOUT:
            return .serverUnavailable(text)
        default:
            return .failed(text)
        }
    }
}
