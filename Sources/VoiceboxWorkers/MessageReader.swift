import Glibc
import VoiceboxSpawn
import VoiceboxWorkerProtocol

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

    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    /// What one read(2) fills, kept from read to read.
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)

    init(descriptor: Int32) {
        self.descriptor = descriptor
        buffer.reserveCapacity(1 << 16)
    }

    mutating func next(within bound: Duration) -> Outcome {
        let deadline = ContinuousClock.now + bound
        while true {
            let available = buffer.count - start
            if available >= 5 {
                guard let tag = WorkerProtocol.Tag(rawValue: buffer[start]) else {
                    return .malformed("an unknown message \(buffer[start])")
                }
                var length = 0
                for index in 0..<4 { length |= Int(buffer[start + 1 + index]) << (8 * index) }
                guard length <= WorkerProtocol.maximumPayload else { return .malformed("a message of \(length) bytes") }
                if available >= 5 + length {
                    let payload = Array(buffer[(start + 5)..<(start + 5 + length)])
                    start += 5 + length
                    return .message(tag, payload)
                }
            }
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return .silent }
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Child.milliseconds(left))
            if ready < 0 {
                if errno == EINTR { continue }
                return .failed(errno)
            }
            if ready == 0 { return .silent }
            let got = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if got < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return .failed(errno)
            }
            if got == 0 { return .closed }
            buffer.append(contentsOf: chunk[0..<got])
        }
    }
}
