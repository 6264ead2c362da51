import VoiceboxContract

/// Reads `WorkerProtocol` messages from a worker's pipe, buffered, waiting in poll(2) at most the
/// bound it is given for each message.
struct MessageReader {
    enum Outcome {
        case message(WorkerProtocol.Tag, [UInt8])
        /// The worker closed its end (it ended) before a whole message came.
        case closed
        /// Nothing whole came within the bound.
        case silent
        /// An unknown tag or a length over the maximum.
        case malformed(String)
        /// read or poll failed (errno).
        case failed(Int32)
    }

    private var frames: FrameReader

    init(descriptor: Int32) {
        frames = FrameReader(descriptor: descriptor, maximumPayload: WorkerProtocol.maximumPayload)
    }

    mutating func next(within bound: Duration) -> Outcome {
        switch frames.next(within: bound) {
        case .frame(let tag, let payload):
            guard let known = WorkerProtocol.Tag(rawValue: tag) else { return .malformed("an unknown message \(tag)") }
            return .message(known, payload)
        case .closed: return .closed
        case .silent: return .silent
        case .malformed(let why): return .malformed(why)
        case .failed(let code): return .failed(code)
        }
    }
}
