import Glibc

/// # The worker protocol, version 1: the boundary between the service and an engine
///
/// voiceboxd does not run libsndfile or libsamplerate on a caller's file: a worker process does,
/// `voicebox-worker`, started by the service for each file and confined before it reads a byte
/// (killed when the service dies, no new privileges, and a seccomp allow-list: it opens no file,
/// a socket, exec, io_uring or ptrace kills it, and it may signal only itself). A worker that crashes on a hostile or broken
/// file ends that one recognition with `UnreadableFile` naming the signal; the service goes on.
/// Adding an engine means adding a worker that speaks this protocol.
///
/// ## Starting
/// `voicebox-worker audio-file --parent PID --name NAME [--raw RATE:CHANNELS]`
/// - standard input: the file, opened read-only by the service after its path or descriptor
///   checks (a regular file, not empty; see `RegularFile`). The worker opens nothing itself.
/// - standard output: a pipe to the service, carrying the messages below.
/// - standard error: diagnostics only (the service's log).
/// - `--parent`: the service's pid; a worker whose parent is already another process exits at once
///   (the service died between the spawn and PR_SET_PDEATHSIG).
/// - `--name`: how messages name the file. `--raw`: read it as headerless signed 16-bit
///   little-endian PCM at that rate and channel count (files named `*.raw`).
/// - environment: `SWIFT_BACKTRACE=enable=no` (a crash is an answer, not a report), and for the
///   tests' sanitizer builds TSAN_OPTIONS / ASAN_OPTIONS leaving crash signals alone; nothing else.
///
/// ## Messages (worker → service)
/// Each is a tag byte, a payload length (UInt32, little-endian, at most `maximumPayload`) and the
/// payload. In order: one `header`, any number of `samples`, then `end` or `failure`; then the
/// worker exits 0.
/// - `H` header: the file's length in seconds as a little-endian IEEE double, NaN when the file
///   does not say (8 bytes). Sent once the file is open and its format understood.
/// - `S` samples: the next samples, 16 kHz mono, signed 16-bit little-endian.
/// - `E` end: the file is read to its end (empty payload).
/// - `F` failure: why the file cannot be read, UTF-8 text meant for the caller
///   (`UnreadableFile`). May come instead of the header.
///
/// ## Flow, bounds and ends
/// The pipe is the flow control: the worker blocks on a full pipe while the service decodes. The
/// service waits at most `headerBound` for the header and `answerBound` for each later message (a
/// worker that sends nothing that long is killed, and the recognition fails with `UnreadableFile`); a worker that ends without `E` or `F` failed, and its
/// end (the signal: SIGSEGV, SIGABRT, SIGKILL, SIGSYS for a forbidden call) names why. The service
/// closes its end when it no longer wants the file (a stop, a cancel, a caller gone): the worker's
/// next write fails and it exits; the service reaps it, killing it if it has not gone within
/// `reapBound`.
public enum WorkerProtocol {
    public static let version = 1
    public static let executableName = "voicebox-worker"
    public static let audioFileMode = "audio-file"

    public enum Tag: UInt8, Sendable {
        case header = 0x48   // H
        case samples = 0x53  // S
        case end = 0x45      // E
        case failure = 0x46  // F
    }

    /// A samples message holds at most this many bytes (and so does any other).
    public static let maximumPayload = 1 << 20
    /// Samples per message the worker sends (a quarter of a second).
    public static let samplesPerMessage = 4_000
    /// The longest the service waits for the worker's header: its start (exec, loading its
    /// libraries) and the file's format.
    public static let headerBound: Duration = .seconds(5)
    /// The longest the service waits for any later message. A healthy worker sends a quarter of a
    /// second of audio in milliseconds; one looping on a hostile file or stopped would otherwise hold
    /// a decoding turn other callers wait for.
    public static let answerBound: Duration = .seconds(3)
    /// The longest the service waits for a worker it is done with to end before killing it.
    public static let reapBound: Duration = .seconds(1)

    /// One message, encoded: tag, length, payload.
    public static func encode(_ tag: Tag, _ payload: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(payload.count <= maximumPayload)
        var bytes = [UInt8]()
        bytes.reserveCapacity(5 + payload.count)
        bytes.append(tag.rawValue)
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes.append(contentsOf: payload)
        return bytes
    }

    public static func encode(_ tag: Tag, _ payload: [UInt8] = []) -> [UInt8] {
        payload.withUnsafeBytes { encode(tag, $0) }
    }

    public static func header(duration: Double?) -> [UInt8] {
        withUnsafeBytes(of: (duration ?? .nan).bitPattern.littleEndian) { encode(.header, $0) }
    }

    public static func samples(_ samples: ArraySlice<Int16>) -> [UInt8] {
        let littleEndian = samples.map(\.littleEndian)
        return littleEndian.withUnsafeBytes { encode(.samples, $0) }
    }

    public static func failure(_ reason: String) -> [UInt8] {
        encode(.failure, Array(reason.utf8.prefix(4096)))
    }

    /// Decodes a header's payload: the duration, nil when unknown; nil for a malformed payload.
    public static func duration(fromHeader payload: [UInt8]) -> Double?? {
        guard payload.count == 8 else { return nil }
        var bits: UInt64 = 0
        for (index, byte) in payload.enumerated() { bits |= UInt64(byte) << (8 * UInt64(index)) }
        let value = Double(bitPattern: bits)
        return .some(value.isNaN ? nil : value)
    }

    /// Decodes a samples payload; nil for an odd length.
    public static func samples(fromPayload payload: [UInt8]) -> [Int16]? {
        guard payload.count % 2 == 0 else { return nil }
        var samples = [Int16](repeating: 0, count: payload.count / 2)
        samples.withUnsafeMutableBytes { $0.copyBytes(from: payload) }
        return samples.map { Int16(littleEndian: $0) }
    }
}
