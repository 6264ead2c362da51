import VoiceboxCore

/// Raw little-endian PCM bytes, in any split, to samples: 16 kHz-ready Int16 when no conversion
/// is needed, mono floats otherwise (channels averaged). Keeps a partial frame for the next bytes.
struct PCMUnpacker {
    enum Unpacked: Equatable {
        /// s16le mono at 16 kHz: the samples as they came, bit for bit (the same as a file's).
        case samples([Int16])
        /// Everything else: mono, -1...1 nominal.
        case floats([Float])
    }

    let encoding: StreamInput.Encoding
    let channels: Int
    /// s16le mono at 16 kHz: handed out as `.samples`.
    let direct: Bool
    private var leftover: [UInt8] = []
    /// Samples unpacked so far, to name the one at fault.
    private var samplesSeen = 0

    init(encoding: StreamInput.Encoding, channels: Int, direct: Bool) {
        self.encoding = encoding
        self.channels = channels
        self.direct = direct && encoding == .s16le && channels == 1
    }

    var leftoverBytes: Int { leftover.count }
    var framesUnpacked: Int { samplesSeen / channels }
    private var frameBytes: Int { encoding.bytesPerSample * channels }

    mutating func unpack(_ bytes: ArraySlice<UInt8>) throws -> Unpacked {
        var data = leftover
        data += bytes
        let whole = data.count / frameBytes * frameBytes
        leftover = Array(data[whole...])
        let frames = whole / frameBytes
        defer { samplesSeen += frames * channels }
        return try data.withUnsafeBytes { raw throws -> Unpacked in
            switch encoding {
            case .s16le where direct:
                return .samples((0..<frames).map { Int16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self)) })
            case .s16le:
                return .floats(mixed(frames) { Float(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self))) / 32_768 })
            case .f32le:
                var bad: Int?
                let floats = mixed(frames) { index -> Float in
                    let bits = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self))
                    let value = Float(bitPattern: bits)
                    if !value.isFinite, bad == nil { bad = index }
                    return value
                }
                if let bad {
                    throw RecognitionError.invalidStream("sample \(samplesSeen + bad) is \(describe(raw, bad)), not a number "
                                                         + "f32le audio can hold")
                }
                return .floats(floats)
            }
        }
    }

    /// Frames of `channels` samples, each averaged to one.
    private func mixed(_ frames: Int, sample: (Int) -> Float) -> [Float] {
        guard channels > 1 else { return (0..<frames).map(sample) }
        let scale = 1 / Float(channels)
        return (0..<frames).map { frame in
            // Each scaled before the sum: finite samples near Float's limit cannot add up to infinity.
            var sum: Float = 0
            for channel in 0..<channels { sum += sample(frame * channels + channel) * scale }
            return sum
        }
    }

    private func describe(_ raw: UnsafeRawBufferPointer, _ index: Int) -> String {
        let value = Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: index * 4, as: UInt32.self)))
        return value.isNaN ? "NaN" : value > 0 ? "+infinity" : "-infinity"
    }

    /// A float sample (full scale ±1) as a 16-bit one, rounded and clipped as libsamplerate's
    /// src_float_to_short_array does (0.2.2, Debian 12's: lrintf of x * 32768 in float), so that
    /// a stream gives a file's samples.
    static func sample(_ value: Float) -> Int16 {
        let scaled = value * 32_768
        guard scaled < 32_767 else { return .max }
        guard scaled > -32_768 else { return .min }
        return Int16(scaled.rounded(.toNearestOrEven))
    }
}
