import VoiceboxContract
import VoiceboxCore
import VoiceboxLock

/// `AudioCapture`: each recording is the helper's, its samples come over the helper's socket.
extension AudioHelper {
    public func open(source: String?) async throws -> any CaptureStream {
        let (chunks, sink) = AsyncStream.makeStream(of: [Int16].self, bufferingPolicy: .bufferingNewest(256))
        let failure = Locked<CaptureError?>(nil)
        // Registered before the request: samples may follow the answer at once.
        let id = state.withLock { state in
            defer { state.nextCapture &+= 1 }
            state.captures[state.nextCapture] = CaptureSink(chunks: sink, failure: failure)
            return state.nextCapture
        }
        let forget = { [state] in _ = state.withLock { $0.captures.removeValue(forKey: id) } }
        switch await ask(.openCapture(capture: id, source: source)) {
        case .outcome(.done):
            keepHeartbeat()
            return HelperCaptureStream(id: id, helper: self, chunks: chunks, failure: failure)
        case .outcome(.captureError(let error)):
            forget()
            throw error
        case .outcome(let other):
            forget()
            tell(.closeCapture(capture: id))
            throw CaptureError.failed("the audio helper answered \(other)")
        case .unreachable(let why), .lost(let why):
            forget()
            tell(.closeCapture(capture: id))  // it may still open it
            throw CaptureError.serverUnavailable(why)
        case .cancelled:
            forget()
            tell(.closeCapture(capture: id))  // the helper closes it once it is open
            throw CancellationError()
        }
    }

    /// A recording ends on the service's side: no more samples are taken for it.
    func finishCapture(_ id: UInt32) {
        guard let sink = state.withLock({ $0.captures.removeValue(forKey: id) }) else { return }
        sink.chunks.finish()
    }
}

/// One recording held by the audio helper. Sendable: immutable references to Sendable things.
final class HelperCaptureStream: CaptureStream {
    let id: UInt32
    private let helper: AudioHelper
    let chunks: AsyncStream<[Int16]>
    private let failureBox: Locked<CaptureError?>
    private let closed = Locked(false)

    init(id: UInt32, helper: AudioHelper, chunks: AsyncStream<[Int16]>, failure: Locked<CaptureError?>) {
        self.id = id
        self.helper = helper
        self.chunks = chunks
        self.failureBox = failure
    }

    deinit {
        // Forgotten without close(): release the microphone anyway.
        guard !closed.withLock({ $0 }) else { return }
        helper.finishCapture(id)
        helper.tell(.closeCapture(capture: id))
    }

    var failure: CaptureError? {
        get async { failureBox.withLock { $0 } }
    }

    func setCorked(_ corked: Bool) async {
        _ = await helper.ask(.setCaptureCorked(capture: id, corked: corked))
    }

    /// Returns once the helper says the server no longer records for us, or after helper-close
    /// (then the helper is killed, which hangs up its server connections, and replaced).
    func close() async {
        let first = closed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        // Not cancelled with the caller's task: the microphone must be released before we return.
        let helper = helper, id = id
        await Task { _ = await helper.ask(.closeCapture(capture: id), within: helper.bounds[.helperClose]) }.value
        helper.finishCapture(id)
    }
}
