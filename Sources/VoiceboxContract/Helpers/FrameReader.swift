import Glibc

/// Reads frames (a tag byte, a UInt32 little-endian payload length, the payload) from a pipe or
/// socket, buffered, waiting in poll(2) at most the bound it is given for each frame. Both of the
/// service's helper protocols frame their messages so; the frames are cut by `FrameParser`, which
/// a reader that must not wait (the service's `AudioHelper`) feeds itself.
public struct FrameReader {
    public enum Outcome: Equatable {
        case frame(tag: UInt8, payload: [UInt8])
        /// The other side closed its end before a whole frame came.
        case closed
        /// Nothing whole came within the bound.
        case silent
        /// A length over the maximum.
        case malformed(String)
        /// read or poll failed (errno).
        case failed(Int32)
    }

    private let descriptor: Int32
    private var parser: FrameParser
    /// What one read(2) fills, kept from read to read.
    private var chunk = [UInt8](repeating: 0, count: 1 << 16)

    public init(descriptor: Int32, maximumPayload: Int) {
        self.descriptor = descriptor
        parser = FrameParser(maximumPayload: maximumPayload)
    }

    /// The next frame; `bound` nil waits as long as it takes.
    public mutating func next(within bound: Duration?) -> Outcome {
        let deadline = bound.map { ContinuousClock.now + $0 }
        while true {
            switch parser.next() {
            case .frame(let tag, let payload): return .frame(tag: tag, payload: payload)
            case .malformed(let why): return .malformed(why)
            case .partial: break
            }
            var timeout: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return .silent }
                timeout = Self.milliseconds(left)
            }
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, timeout)
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
            chunk.withUnsafeBytes { parser.append(UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
        }
    }

    /// One frame: the tag, the payload's length (UInt32, little-endian) and the payload.
    public static func frame(tag: UInt8, _ payload: UnsafeRawBufferPointer) -> [UInt8] {
        var bytes = [UInt8]()
        bytes.reserveCapacity(5 + payload.count)
        bytes.append(tag)
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: payload)
        return bytes
    }

    /// Writes all of `bytes` to a non-blocking-capable descriptor, waiting in poll(2) until
    /// `deadline` at most. Returns nil, or the errno that ended it (ETIMEDOUT for the deadline).
    public static func write(_ bytes: [UInt8], to descriptor: Int32, until deadline: ContinuousClock.Instant) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
            if sent >= 0 {
                offset += sent
                continue
            }
            switch errno {
            case EINTR: continue
            case EAGAIN:
                let left = deadline - ContinuousClock.now
                guard left > .zero else { return ETIMEDOUT }
                var entry = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                _ = poll(&entry, 1, Self.milliseconds(left))
            default:
                return errno
            }
        }
        return nil
    }

    /// poll(2)'s timeout for `duration`: whole milliseconds, rounded up (at most a day).
    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, duration > .zero else { return 0 }
        return Int32(min(86_400_000, seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000))
    }
}
