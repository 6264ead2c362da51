/// Cuts frames (a tag byte, a UInt32 little-endian payload length, the payload) out of bytes as
/// they come, without reading or waiting itself: `FrameReader` feeds it what its read(2) brings,
/// and a reader driven by readiness (the service's `AudioHelper`, whose socket a Dispatch source
/// watches) what each read brought, in whatever pieces the socket cut them.
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
}
