import VoiceboxCore

/// A caller's raw PCM stream (Recognize's option `stream`), in bytes as they come, to the 16 kHz
/// mono samples the decoders take: unpacked (channels averaged, NaN and infinite floats refused)
/// and resampled by libsamplerate, as a file's samples are. Run where the stream is read: a
/// `voicebox-worker audio-stream`, never voiceboxd.
public struct PCMConverter {
    /// What the decoders take.
    public static let sampleRate = 16_000

    private let encoding: StreamInput.Encoding
    private let channels: Int
    private var unpacker: PCMUnpacker
    private let resampler: Resampler?

    public init(encoding: StreamInput.Encoding, rate: Int, channels: Int) throws {
        self.encoding = encoding
        self.channels = channels
        unpacker = PCMUnpacker(encoding: encoding, channels: channels,
                               direct: StreamInput.isDecodersFormat(encoding, rate: rate, channels: channels))
        resampler = rate == Self.sampleRate ? nil : try Resampler(from: rate, to: Self.sampleRate)
    }

    /// The samples `bytes` (the next of the stream, in any split) make; a partial frame is kept.
    public mutating func convert(_ bytes: ArraySlice<UInt8>) throws -> [Int16] {
        switch try unpacker.unpack(bytes) {
        case .samples(let samples): samples
        case .floats(let floats): Self.samples(try resampler?.process(floats, end: false) ?? floats)
        }
    }

    /// The stream ended: what the filter still holds. A writer that reset its connection had no
    /// chance to finish its last frame (`reset`); any other end with part of a frame is refused.
    public mutating func finish(reset: Bool) throws -> [Int16] {
        if unpacker.leftoverBytes > 0, !reset {
            throw StreamInput.partialFrame(unpacker.leftoverBytes, encoding, channels: channels)
        }
        return Self.samples(try resampler?.process([], end: true) ?? [])
    }

    private static func samples(_ floats: [Float]) -> [Int16] { floats.map(PCMUnpacker.sample) }
}
