/// The 44-byte header of a RIFF WAVE file of 16-bit PCM (what Speak's `output` writes).
///
/// Written before the audio, when its length is not known yet. A file that can be written at an
/// offset gets the real sizes at the end (`sizes`); a pipe cannot, so its header keeps the sizes
/// `espeak-ng --stdout` writes: the data as long as a 32-bit size allows without overflowing
/// (0x7FFFF000 bytes) and the RIFF size 36 more. Readers (sox, Python's wave, GStreamer, ffmpeg)
/// read such a file to its end; 0xFFFFFFFF instead made sox warn of a premature end.
public enum WAVHeader {
    public static let size = 44
    /// The unknown length, as `espeak-ng --stdout` gives it.
    public static let streamingDataSize: UInt32 = 0x7FFF_F000
    /// Where the sizes are, from the start of the header.
    public static let riffSizeOffset = 4
    public static let dataSizeOffset = 40

    /// A header for 16-bit samples; `dataBytes` nil: length unknown (`streamingDataSize`).
    public static func bytes(sampleRate: Int, channels: Int, dataBytes: UInt32? = nil) -> [UInt8] {
        let data = dataBytes ?? streamingDataSize
        var header: [UInt8] = []
        header.reserveCapacity(size)
        header += Array("RIFF".utf8)
        append32(riffSize(data), &header)
        header += Array("WAVEfmt ".utf8)
        append32(16, &header)                                   // the fmt chunk's size
        append16(1, &header)                                    // PCM
        append16(UInt16(channels), &header)
        append32(UInt32(sampleRate), &header)
        append32(UInt32(sampleRate * channels * 2), &header)    // bytes per second
        append16(UInt16(channels * 2), &header)                 // bytes per frame
        append16(16, &header)                                   // bits per sample
        header += Array("data".utf8)
        append32(data, &header)
        return header
    }

    /// The RIFF and data sizes for `dataBytes` of audio, as little-endian fields to write at
    /// `riffSizeOffset` and `dataSizeOffset`; a length past what 32 bits hold keeps the unknown one.
    public static func sizes(dataBytes: Int) -> (riff: [UInt8], data: [UInt8]) {
        let data = dataBytes <= Int(streamingDataSize) ? UInt32(dataBytes) : streamingDataSize
        var riff: [UInt8] = [], field: [UInt8] = []
        append32(riffSize(data), &riff)
        append32(data, &field)
        return (riff, field)
    }

    private static func riffSize(_ data: UInt32) -> UInt32 { data + 36 }

    private static func append32(_ value: UInt32, _ bytes: inout [UInt8]) {
        bytes += [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
    }

    private static func append16(_ value: UInt16, _ bytes: inout [UInt8]) {
        bytes += [UInt8(value & 0xFF), UInt8(value >> 8)]
    }
}
