/// Turns the byte fragments a PulseAudio record stream hands out into whole S16LE samples and
/// chunks of a steady size.
///
/// Why it exists: `pa_stream_peek` promises neither whole samples (a fragment may end in the
/// middle of one) nor data at all (a "hole" is a length without bytes), and the server's
/// fragment size is only a wish. Pure value type, so it is tested without a server.
struct SampleAssembler {
    /// Chunks are at least this many samples, and at most `maxChunk` unless more is pending
    /// (then it is split into equal parts no longer than `maxChunk`).
    let minChunk: Int
    let maxChunk: Int

    private var pending: [Int16] = []
    /// The low byte of a sample whose high byte has not arrived yet.
    private var carry: UInt8?
    /// Whether the next byte of the stream sits at an odd offset (is a sample's high byte).
    /// Tracked across holes too, so a hole of odd length does not shift every later sample.
    private var nextByteIsHigh = false

    init(minChunk: Int, maxChunk: Int) {
        precondition(minChunk > 0 && maxChunk >= 2 * minChunk, "equal splitting needs max >= 2 min")
        self.minChunk = minChunk
        self.maxChunk = maxChunk
    }

    /// Adds one fragment of little-endian bytes; returns the chunks that are now complete.
    mutating func append(_ bytes: UnsafeRawBufferPointer) -> [[Int16]] {
        var index = 0
        if nextByteIsHigh, !bytes.isEmpty {
            // Completes the carried sample, or is the orphaned half of a sample lost in a hole.
            if let low = carry { pending.append(Self.sample(low, bytes[0])) }
            carry = nil
            index = 1
        }
        let pairs = (bytes.count - index) / 2
        pending.reserveCapacity(pending.count + pairs)
        for pair in 0..<pairs {
            pending.append(Self.sample(bytes[index + 2 * pair], bytes[index + 2 * pair + 1]))
        }
        index += 2 * pairs
        if index < bytes.count { carry = bytes[index] }
        if bytes.count % 2 == 1 { nextByteIsHigh.toggle() }
        return takeChunks()
    }

    /// Skips a hole of `byteCount` bytes (missing data): samples it touches are dropped.
    mutating func skip(byteCount: Int) {
        carry = nil
        if byteCount % 2 == 1 { nextByteIsHigh.toggle() }
    }

    private mutating func takeChunks() -> [[Int16]] {
        guard pending.count >= minChunk else { return [] }
        let parts = (pending.count + maxChunk - 1) / maxChunk
        var chunks: [[Int16]] = []
        var start = 0
        for part in 0..<parts {
            let end = pending.count * (part + 1) / parts
            chunks.append(Array(pending[start..<end]))
            start = end
        }
        pending.removeAll(keepingCapacity: true)
        return chunks
    }

    private static func sample(_ low: UInt8, _ high: UInt8) -> Int16 {
        Int16(bitPattern: UInt16(low) | UInt16(high) << 8)
    }
}
