import CSamplerate
import CSndfile
import Glibc
import VoiceboxCore
import VoiceboxSamplerate

/// Reads an audio file piece by piece as 16 kHz mono 16-bit samples, whatever its format, rate
/// and channels (anything libsndfile decodes: WAV, FLAC, Ogg/Vorbis, Opus, MP3, AIFF, ...).
/// Memory stays bounded: an hour of audio is never held whole.
///
/// Files named `*.raw` have no header: they are read as `RawAudioFormat` (by default
/// pocketsphinx's 16 kHz mono signed 16-bit little-endian).
public final class AudioFileReader: AudioFile {
    public static let sampleRate = 16_000

    public let path: String
    public let sourceSampleRate: Int
    public let channels: Int
    /// Length in seconds, or nil when the file does not say.
    public let duration: Double?
    /// Seconds of the file read so far.
    public var position: Double { Double(framesRead) / Double(sourceSampleRate) }

    private let fd: Int32
    private let file: OpaquePointer
    private let resampler: Resampler?
    /// Whether libsndfile can hand out the samples as Int16 unchanged (integer PCM and the
    /// like). Float and lossy sources go through floats: read as integers, libsndfile turns
    /// them into zeros, or with SFC_SET_SCALE_FLOAT_INT_READ scales them to the file's peak,
    /// which changes what the recognizer hears.
    private let integerSamples: Bool
    private static let integerSubtypes: Set<Int> = [SF_FORMAT_PCM_S8, SF_FORMAT_PCM_U8, SF_FORMAT_PCM_16,
                                                    SF_FORMAT_PCM_24, SF_FORMAT_PCM_32, SF_FORMAT_ULAW, SF_FORMAT_ALAW]
    private var framesRead: Int64 = 0
    private var atEnd = false

    /// Opens `path` with the checks every audio file passes (`RegularFile`); `raw` is how a `*.raw`
    /// file is read.
    public convenience init(path: String, raw: RawAudioFormat = .pocketsphinx) throws {
        let fd = try RegularFile.open(path)
        try self.init(descriptor: fd, name: path, raw: path.lowercased().hasSuffix(".raw") ? raw : nil)
    }

    /// Reads an open file, which it owns from here on (closed when it is done or fails). `raw`: read
    /// it as headerless PCM of that layout.
    public init(descriptor fd: Int32, name: String, raw: RawAudioFormat?) throws {
        path = name
        var info = SF_INFO()
        if let raw {
            info.format = Int32(SF_FORMAT_RAW | SF_FORMAT_PCM_16 | SF_ENDIAN_LITTLE)
            info.samplerate = Int32(raw.sampleRate)
            info.channels = Int32(raw.channels)
        }
        // close_desc 0: the descriptor stays ours, closed in deinit or right here.
        guard let file = sf_open_fd(fd, Int32(SFM_READ), &info, 0) else {
            let reason = String(cString: sf_strerror(nil))
            close(fd)
            throw RecognitionError.unreadableAudio("\(self.path): not audio that libsndfile can decode (\(reason))")
        }
        if let problem = Self.unsupportedLayout(sampleRate: Int(info.samplerate), channels: Int(info.channels)) {
            sf_close(file)
            close(fd)
            throw RecognitionError.unreadableAudio("\(self.path): \(problem)")
        }
        self.fd = fd
        self.file = file
        sourceSampleRate = Int(info.samplerate)
        channels = Int(info.channels)
        duration = info.frames > 0 && info.frames < Int64.max ? Double(info.frames) / Double(info.samplerate) : nil
        integerSamples = Self.integerSubtypes.contains(Int(info.format) & SF_FORMAT_SUBMASK)
        do {
            resampler = sourceSampleRate == Self.sampleRate ? nil : try Resampler(from: sourceSampleRate, to: Self.sampleRate)
        } catch {
            sf_close(file)
            close(fd)
            throw error
        }
    }

    deinit {
        sf_close(file)
        close(fd)
    }

    /// The next samples (about `maxSamples` of them), or [] at the end of the file.
    public func read(maxSamples: Int = 4096) throws -> [Int16] {
        guard !atEnd else { return [] }
        if resampler == nil, channels == 1, integerSamples { return readDirect(maxSamples) }
        let ratio = resampler?.ratio ?? 1
        let frames = max(1, Int(Double(maxSamples) / ratio))
        var interleaved = [Float](repeating: 0, count: frames * channels)
        let got = Int(interleaved.withUnsafeMutableBufferPointer { sf_readf_float(file, $0.baseAddress, Int64(frames)) })
        framesRead += Int64(got)
        if got < frames { atEnd = true }
        var mono = Self.downmix(interleaved, frames: got, channels: channels)
        if let resampler { mono = try resampler.process(mono, end: atEnd) }
        var samples = [Int16](repeating: 0, count: mono.count)
        src_float_to_short_array(mono, &samples, Int32(mono.count))
        if samples.isEmpty, !atEnd { return try read(maxSamples: maxSamples) }
        return samples
    }

    /// 16 kHz mono integer samples need no conversion: they come through bit for bit.
    private func readDirect(_ maxSamples: Int) -> [Int16] {
        var samples = [Int16](repeating: 0, count: max(1, maxSamples))
        let got = Int(samples.withUnsafeMutableBufferPointer { sf_readf_short(file, $0.baseAddress, Int64($0.count)) })
        framesRead += Int64(got)
        if got < samples.count { atEnd = true }
        samples.removeSubrange(got...)
        return samples
    }

    private static func downmix(_ interleaved: [Float], frames: Int, channels: Int) -> [Float] {
        guard channels > 1 else { return Array(interleaved[0..<frames]) }
        let scale = 1 / Float(channels)
        return (0..<frames).map { frame in
            var sum: Float = 0
            for channel in 0..<channels { sum += interleaved[frame * channels + channel] }
            return sum * scale
        }
    }

    /// The sample rates read: what speech recordings use, telephone (8 kHz) to studio (192 kHz).
    /// libsamplerate converts ratios up to 256 either way, but a header claiming 1 Hz or 10 MHz is
    /// a broken or hostile file, not speech.
    public static let sampleRates = 8_000...192_000
    /// Channels mixed down to mono; a frame of more would only be a way to make the reader's buffers huge.
    public static let maximumChannels = 64

    /// Why a header's rate or channel count cannot be read, or nil if it can.
    static func unsupportedLayout(sampleRate: Int, channels: Int) -> String? {
        if sampleRate <= 0 || channels <= 0 { return "no sample rate or channels in the header" }
        if !sampleRates.contains(sampleRate) {
            return "sample rate \(grouped(sampleRate)) Hz is outside \(grouped(sampleRates.lowerBound))–\(grouped(sampleRates.upperBound)) Hz"
        }
        if channels > maximumChannels { return "\(channels) channels; at most \(maximumChannels) are mixed down" }
        return nil
    }

    /// 192000 as "192,000", whatever the locale.
    private static func grouped(_ number: Int) -> String {
        var digits = Array(String(number.magnitude))
        var index = digits.count - 3
        while index > 0 {
            digits.insert(",", at: index)
            index -= 3
        }
        return (number < 0 ? "-" : "") + String(digits)
    }
}

/// How to read a headerless `.raw` file.
public struct RawAudioFormat: Sendable, Equatable {
    public var sampleRate: Int
    public var channels: Int

    public init(sampleRate: Int, channels: Int) {
        self.sampleRate = sampleRate
        self.channels = channels
    }

    /// pocketsphinx's own convention (its test recordings use it).
    public static let pocketsphinx = RawAudioFormat(sampleRate: 16_000, channels: 1)
}
