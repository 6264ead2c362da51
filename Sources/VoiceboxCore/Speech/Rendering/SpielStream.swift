/// The `audio/x-spiel` stream a Spiel client reads from the pipe it gave Synthesize: the layout of
/// libspeechprovider's speech-provider-common.h, protocol version "0.01". Packed, in the machine's
/// own byte order (little-endian on every platform Voicebox builds for):
/// - a header: the four bytes "0.01";
/// - an audio chunk: type 1 (u8), length (u32), that many bytes of PCM in the voice's format;
/// - an event chunk: type 2 (u8), event type (u8: 1 word, 2 sentence, 3 range, 4 mark), range start
///   and end (u32 each, in characters of the utterance's text), name length (u32), the name (UTF-8).
///
/// Every chunk is at most `maximumChunk` bytes and is written with one write(2): a pipe takes that
/// much atomically, so a reader that reads a chunk's fields with plain read(2)s, as
/// libspeechprovider's reader does, never meets a chunk only partly there.
public enum SpielStream {
    public static let header: [UInt8] = Array("0.01".utf8)
    /// PIPE_BUF on Linux.
    public static let maximumChunk = 4096
    /// Audio bytes in a full chunk: what is left after the 5-byte chunk head, in whole 16-bit samples.
    public static let audioPerChunk = (maximumChunk - 5) & ~1

    public enum EventType: UInt8, Sendable {
        case word = 1, sentence = 2, range = 3, mark = 4
    }

    /// `pcm` as audio chunks of at most `maximumChunk` bytes each.
    public static func audioChunks(_ pcm: ArraySlice<UInt8>) -> [[UInt8]] {
        var chunks: [[UInt8]] = []
        var start = pcm.startIndex
        while start < pcm.endIndex {
            let end = min(pcm.endIndex, start + audioPerChunk)
            var chunk: [UInt8] = [1]
            chunk.reserveCapacity(5 + end - start)
            append(UInt32(end - start), to: &chunk)
            chunk += pcm[start..<end]
            chunks.append(chunk)
            start = end
        }
        return chunks
    }

    /// One event chunk. The name length counts bytes, which is what the reader reads (its writer
    /// counts characters, which differ for a non-ASCII name: that writer's reader would misread it).
    public static func event(_ type: EventType, start: Int, end: Int, name: String = "") -> [UInt8] {
        let name = Array(name.utf8)
        var chunk: [UInt8] = [2, type.rawValue]
        chunk.reserveCapacity(14 + name.count)
        append(UInt32(clamping: start), to: &chunk)
        append(UInt32(clamping: end), to: &chunk)
        append(UInt32(name.count), to: &chunk)
        return chunk + name
    }

    private static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value) { bytes += $0 }
    }
}
