import Synchronization

/// How StopRecognition and CancelRecognition reach a recognition that is busy decoding on its
/// own queue: a flag its loop checks at every chunk, and the open microphone, which is closed
/// at once so that a loop waiting for audio wakes up (and the recording indicator goes away).
final class RecognitionControl: Sendable {
    enum Request: Sendable, Equatable {
        /// Finish now with what was heard.
        case stop
        /// Finish now with nothing (Cancelled); also when the caller left the bus.
        case cancel
        /// Finish now with what was heard: a call held the microphone too long.
        case interrupt
    }

    private struct State {
        var request: Request?
        var microphone: (any CaptureStream)?
    }

    private let state = Mutex(State())

    var request: Request? { state.withLock { $0.request } }

    /// Records a request and returns the microphone to close, if one is open. A cancel
    /// overrides an earlier stop (the caller no longer wants the answer); not the other way round.
    func request(_ request: Request) -> (any CaptureStream)? {
        state.withLock { state in
            if state.request != .cancel { state.request = request }
            return state.microphone
        }
    }

    /// Registers the open microphone; false (and not kept) when a request came first, in which
    /// case the recognition must close it itself.
    func attach(_ microphone: any CaptureStream) -> Bool {
        state.withLock { state in
            guard state.request == nil else { return false }
            state.microphone = microphone
            return true
        }
    }

    /// The open microphone, if any (to cork it while a call has the audio).
    var microphone: (any CaptureStream)? { state.withLock { $0.microphone } }

    func detach() {
        state.withLock { $0.microphone = nil }
    }
}
