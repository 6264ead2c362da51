/// The caller's own audio, streamed through a descriptor as it is produced (Recognize's option
/// `stream`): raw little-endian PCM, read as 16 kHz mono. Back-pressure comes through the pipe:
/// the service reads only as fast as it decodes, so memory stays bounded however fast the
/// writer is.
public struct StreamInput: Sendable, Equatable {
    public enum Encoding: String, Sendable, CaseIterable {
        case s16le
        case f32le

        public var bytesPerSample: Int {
            switch self {
            case .s16le: 2
            case .f32le: 4
            }
        }
    }

    /// The rates resampled to 16 kHz: telephone to studio speech.
    public static let rates: ClosedRange<UInt32> = 8_000...48_000
    public static let maximumChannels: UInt32 = 8
    /// How long a writer may send nothing before the recognition ends with what was heard
    /// (reason `timeout`): a live source sends audio all the time, silence included.
    public static let defaultIdleSeconds = 10.0
    public static let idleSecondsRange: ClosedRange<Double> = 0.1...3_600

    /// Open for the length of the call (the call's descriptors close when it is answered).
    public var descriptor: Int32
    public var encoding = Encoding.s16le
    public var rate = 16_000
    public var channels = 1
    public var idleSeconds = defaultIdleSeconds

    public init(descriptor: Int32, encoding: Encoding = .s16le, rate: Int = 16_000, channels: Int = 1,
                idleSeconds: Double = defaultIdleSeconds) {
        self.descriptor = descriptor
        self.encoding = encoding
        self.rate = rate
        self.channels = channels
        self.idleSeconds = idleSeconds
    }

    /// Whether audio in this format is what the decoders take, 16 kHz mono s16le: its bytes are
    /// the samples, and nothing converts it.
    public static func isDecodersFormat(_ encoding: Encoding, rate: Int, channels: Int) -> Bool {
        encoding == .s16le && rate == 16_000 && channels == 1
    }

    public var isDecodersFormat: Bool { Self.isDecodersFormat(encoding, rate: rate, channels: channels) }

    /// A stream that ended `bytes` into a frame of its format.
    public static func partialFrame(_ bytes: Int, _ encoding: Encoding, channels: Int) -> RecognitionError {
        .invalidStream("it ended with \(bytes) bytes that are not a whole frame of \(encoding.bytesPerSample * channels) "
                       + "(\(encoding.rawValue), \(channels) channels)")
    }
}

/// Opens streams. Raw PCM through a pipe or stream socket stands behind it in production
/// (VoiceboxStreams' `DescriptorAudioStreams`); tests swap in a scripted one.
public protocol AudioStreams: Sendable {
    /// Checks the descriptor (a pipe, a stream socket or a regular file, open for reading) and
    /// prepares to read it. Throws `RecognitionError.invalidArgument` for anything else.
    func open(_ input: StreamInput) throws -> any AudioStream
}

/// One stream being read, from one task at a time: `read` waits for the writer (without
/// spinning) until it has `maxSamples` samples, the stream ends, the writer stalls past the
/// idle bound or `wake()` is called.
public protocol AudioStream: AudioFile {
    /// Why the last `read` came back short: nil while the stream goes on or after its end.
    var stop: AudioStreamStop? { get }
    /// Makes a `read` that waits return at once, from any thread (StopRecognition, a caller
    /// that left). Valid until `close()`.
    var waker: AudioStreamWaker { get }
    /// Releases what the stream holds of its own (not the caller's descriptor, which is the
    /// call's). Idempotent; no `wake()` may come after it.
    func close()
    /// Set before reading: when a read stops waiting for the writer (`writerIdle`), and how the
    /// stream takes turns with others while it always has audio.
    var parking: AudioStreamParking? { get set }
    /// Whether the last `read` came back short because the writer sent nothing for
    /// `parking.releaseAfter`: the stream is parked; the reader may give its decoder back, then
    /// `waitForWriter()` and resume.
    var writerIdle: Bool { get }
    /// Waits for the writer (the stream parked): until it sends again or the stream ends
    /// (`.audio`: `read` goes on), until it stalls past the idle bound or `wake()` comes
    /// (`.stopped`; `stop` says which), or for no more than `patience` (`.silent`).
    func waitForWriter(upTo patience: Duration?) throws -> WriterWait
    /// The reader has a core and a decoder (again): its turn, and how far the writer falls
    /// behind real time while it holds the decoder, count from now.
    func startTurn()
    /// While above zero, each `read` also takes in, without waiting, what the writer has already
    /// sent, until this many samples wait in the stream's buffer (`buffered`): a writer faster
    /// than the decoder is read ahead, a live one costs nothing more.
    var readAheadLimit: Int { get set }
    /// Samples read from the writer that `read` has not taken yet.
    var buffered: Int { get }
    /// Whether the writer closed its end: all it sent is taken or `buffered`.
    var hasEnded: Bool { get }
    /// Everything `buffered`, at once, without waiting or taking a turn.
    func takeBuffered() -> [Int16]
}

public enum WriterWait: Sendable, Equatable {
    case audio, stopped, silent
}

/// How a stream shares the decoders while it waits for its writer: after `after` it gives its
/// turn back (`park`, keeping its decoder) until the writer sends again (`resume`); after
/// `releaseAfter` its read comes back short, still parked, with `AudioStream.writerIdle` set, so
/// that the reader gives the decoder itself back, then `waitForWriter()` and `resume` again. And
/// after each `turn` of decoding a stream that always has audio parks and resumes, keeping its
/// decoder, so that others' files and streams decode too. Both are called on the reading thread
/// and may block it (`resume` until a turn is free).
public struct AudioStreamParking: Sendable {
    /// How long a read waits for the writer before it gives its turn back.
    public let after: Duration
    /// How long a read waits for the writer before it comes back short (`writerIdle`).
    public let releaseAfter: Duration
    /// How long a stream may decode before it gives its turn back and waits for the next one
    /// (at once if nobody else waits): a stream that always has audio keeps no one waiting longer.
    public let turn: Duration
    public let park: @Sendable () -> Void
    /// False: the recognition was stopped or cancelled meanwhile; read no more.
    public let resume: @Sendable () -> Bool

    public init(after: Duration, releaseAfter: Duration = .seconds(2), turn: Duration = .seconds(1),
                park: @escaping @Sendable () -> Void, resume: @escaping @Sendable () -> Bool) {
        self.after = after
        self.releaseAfter = max(releaseAfter, after)
        self.turn = turn
        self.park = park
        self.resume = resume
    }
}

public enum AudioStreamStop: Sendable, Equatable {
    /// The writer sent nothing for the idle bound.
    case idle
    /// `wake()` was called.
    case woken
}

/// Wakes a stream's reader from another thread.
public struct AudioStreamWaker: Sendable {
    private let action: @Sendable () -> Void

    public init(_ action: @escaping @Sendable () -> Void) { self.action = action }

    public func wake() { action() }
}

/// Converts a caller's stream that is not already 16 kHz mono s16le where it is read: a confined
/// `voicebox-worker audio-stream` reads the caller's descriptor, unpacks and resamples it
/// (libsamplerate), and sends the samples on a pipe as `WorkerProtocol` frames. voiceboxd converts
/// nothing and maps no resampler (`VoiceboxWorkers.WorkerAudioFiles` starts them).
public protocol StreamConverters: Sendable {
    /// Starts a converter reading `descriptor` (ours, handed over: the worker gets its own copy),
    /// a regular file from `offset` on (pread: the descriptor's own offset is left alone).
    func convert(_ input: StreamInput, reading descriptor: Int32, from offset: Int64?) throws -> any StreamConversion
}

/// One converter at work, owned by the stream that reads its samples.
public protocol StreamConversion: AnyObject {
    /// The pipe the samples come on (frames: `S` samples, then `E` or `F`); the reader's to poll.
    var output: Int32 { get }
    /// How it ended, once its pipe closed without `E` or `F` ("killed by SIGSEGV …"), waiting for
    /// that end within `worker-end`.
    func ending() -> String
    /// Done with it: closes `output`; one that has not finished is killed; reaped within `worker-reap`.
    func dismiss(finished: Bool)
}
