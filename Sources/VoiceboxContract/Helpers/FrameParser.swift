import Glibc

/// Cuts frames (a tag byte, a UInt32 little-endian payload length, the payload) out of bytes as
/// they come, without waiting: `FrameReader` feeds it what its read(2) brings, and a reader driven
/// by readiness (both ends of the audio helper's socket) has it read what the socket holds now
/// (`readAvailable`), in whatever pieces the socket cut it.
public struct FrameParser {
    public enum Next: Equatable {
        case frame(tag: UInt8, payload: [UInt8])
        /// No whole frame is here yet: more bytes are needed.
        case partial
        /// A length over the maximum: nothing after it can be read as frames.
        case malformed(String)
    }

    private let maximumPayload: Int
    private var buffer: [UInt8] = []
    /// Where the bytes not yet taken begin in `buffer`.
    private var start = 0

    public init(maximumPayload: Int) {
        self.maximumPayload = maximumPayload
        buffer.reserveCapacity(1 << 16)
    }

    /// Whether part of a frame is here, waiting for the rest.
    public var isMidFrame: Bool { buffer.count > start }

    /// Takes bytes that came, after those taken before.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, taken out; `.partial` until one is whole. A malformed length is
    /// reported again at each call: the stream cannot be read on.
    public mutating func next() -> Next {
        let available = buffer.count - start
        guard available >= 5 else { return .partial }
        var length = 0
        for index in 0..<4 { length |= Int(buffer[start + 1 + index]) << (8 * index) }
        guard length <= maximumPayload else { return .malformed("a message of \(length) bytes") }
        guard available >= 5 + length else { return .partial }
        let tag = buffer[start]
        let payload = Array(buffer[(start + 5)..<(start + 5 + length)])
        start += 5 + length
        return .frame(tag: tag, payload: payload)
    }

    /// How the other side of a socket read with `readAvailable` ended.
    public enum SocketEnd: Equatable {
        /// It closed its end, or reset it.
        case closed
        /// recv(2) failed (errno).
        case failed(Int32)
        /// A length over the maximum.
        case malformed(String)
        /// `deliver` refused a frame: why.
        case refused(String)
    }

    /// Reads what the non-blocking `descriptor` has (into `chunk`, kept from read to read), hands
    /// each whole frame to `deliver` (which returns why it refuses it, nil if it takes it), and
    /// returns how the other side ended, nil once the socket has nothing more for now. Reads until
    /// then: an end that came with the last bytes raises no second readiness event. Both ends of
    /// the audio helper's socket read so (`AudioHelper.Process`, voicebox-audio's `ServiceSocket`).
    public mutating func readAvailable(from descriptor: Int32, using chunk: inout [UInt8],
                                       _ deliver: (UInt8, [UInt8]) -> String?) -> SocketEnd? {
        while true {
            let got = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if got < 0 {
                switch errno {
                case EINTR: continue
                case EAGAIN, EWOULDBLOCK: return nil
                case ECONNRESET: return .closed
                case let code: return .failed(code)
                }
            }
            if got == 0 { return .closed }
            chunk.withUnsafeBytes { append(UnsafeRawBufferPointer(rebasing: $0[0..<got])) }
            frames: while true {
                switch next() {
                case .frame(let tag, let payload):
                    if let why = deliver(tag, payload) { return .refused(why) }
                case .malformed(let why):
                    return .malformed(why)
                case .partial:
                    break frames
                }
            }
        }
    }
}
