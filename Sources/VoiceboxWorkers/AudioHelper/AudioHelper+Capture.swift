import VoiceboxContract
import VoiceboxCore

/// `AudioCapture`: each recording is the helper's, its samples come over the helper's socket.
/// What is known of a recording (its samples' end, its failure, whether it is being closed) is
/// the actor's (`Capture`), from its open until its stream is dropped.
extension AudioHelper {
    public func open(source: String?) async throws -> any CaptureStream {
        // Up to about 20 s of audio (chunks of 20 ms and more, 0.65 MB): a microphone recognition
        // reads nothing until its model has loaded (within `worker-model-load`, 15 s), and what
        // was said meanwhile is decoded then. A reader further behind loses the oldest.
        let (chunks, sink) = AsyncStream.makeStream(of: [Int16].self, bufferingPolicy: .bufferingNewest(1024))
        // Registered before the request: samples may follow the answer at once.
        let id = nextCapture
        nextCapture &+= 1
        captures[id] = Capture(chunks: sink)
        switch await ask(.openCapture(capture: id, source: source)) {
        case .outcome(.done):
            keepHeartbeat()
            return HelperCaptureStream(id: id, helper: self, chunks: chunks)
        case .outcome(.captureError(let error)):
            captures[id] = nil
            throw error
        case .outcome(let other):
            captures[id] = nil
            tell(.closeCapture(capture: id))
            throw CaptureError.failed("the audio helper answered \(other)")
        case .unreachable(let why), .lost(let why):
            captures[id] = nil
            tell(.closeCapture(capture: id))  // it may still open it
            throw CaptureError.serverUnavailable(why)
        case .cancelled:
            captures[id] = nil
            tell(.closeCapture(capture: id))  // the helper closes it once it is open
            throw CancellationError()
        }
    }

    /// Returns once the helper says the server no longer records for us, or after helper-close
    /// (then the helper is killed, which hangs up its server connections, and replaced). Only the
    /// first close waits; the others return at once.
    func closeCapture(_ id: UInt32) async {
        guard let capture = captures[id], !capture.closed else { return }
        captures[id]?.closed = true
        _ = await ask(.closeCapture(capture: id), within: bounds[.helperClose])
        finishCapture(id)
    }

    /// A recording's stream is gone: forgotten, and closed if it was not (the microphone is released).
    func dropCapture(_ id: UInt32) {
        guard let capture = captures.removeValue(forKey: id), !capture.closed else { return }
        capture.chunks?.finish()
        tell(.closeCapture(capture: id))
    }

    func failure(ofCapture id: UInt32) -> CaptureError? {
        captures[id]?.failure
    }

    /// A recording ends on the service's side: no more samples are taken for it.
    private func finishCapture(_ id: UInt32) {
        captures[id]?.chunks?.finish()
        captures[id]?.chunks = nil
    }
}

/// One recording held by the audio helper: its id and samples; the rest is the actor's.
final class HelperCaptureStream: CaptureStream {
    let id: UInt32
    private let helper: AudioHelper
    let chunks: AsyncStream<[Int16]>

    init(id: UInt32, helper: AudioHelper, chunks: AsyncStream<[Int16]>) {
        self.id = id
        self.helper = helper
        self.chunks = chunks
    }

    deinit {
        // Forgotten without close(): release the microphone anyway.
        let helper = helper, id = id
        Task { await helper.dropCapture(id) }
    }

    var failure: CaptureError? {
        get async { await helper.failure(ofCapture: id) }
    }

    func setCorked(_ corked: Bool) async {
        _ = await helper.ask(.setCaptureCorked(capture: id, corked: corked))
    }

    /// Returns once the helper says the server no longer records for us, or after helper-close.
    func close() async {
        // Not cancelled with the caller's task: the microphone must be released before we return.
        let helper = helper, id = id
        await Task { await helper.closeCapture(id) }.value
    }
}
