import Glibc

/// # The worker protocol, version 4: the boundary between the service and an engine
///
/// voiceboxd never decodes: it does not run pocketsphinx on any audio, nor libsndfile or
/// libsamplerate on a caller's file or stream. Worker processes do, `voicebox-worker`, in three
/// modes: `audio-file` (a caller's file to 16 kHz samples), `audio-stream` (a caller's raw stream
/// that is not 16 kHz mono s16le to 16 kHz samples) and `decoder` (16 kHz samples to words).
/// Each is confined before it reads a byte of a caller's audio (killed when the service dies, no
/// new privileges, and a seccomp allow-list: a socket, exec, io_uring or ptrace kills it, it opens
/// no file for writing, and it may signal only itself). A worker that crashes ends only its
/// recognition, with `UnreadableFile` or `EngineUnavailable` naming the signal; the service goes on.
/// Adding an engine means adding a worker mode that speaks this protocol.
///
/// Both modes frame their messages alike: a tag byte, a payload length (UInt32, little-endian, at
/// most `maximumPayload`) and the payload.
///
/// # Mode `audio-file`
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
/// service waits at most `file-worker-header` (5 s; every bound here is voiceboxd's `Bound`, named
/// as `voiceboxd --bound` takes it) for the header: the worker's start (exec, loading its
/// libraries) and the file's format; and `file-worker-answer` (3 s) for each later message: a
/// healthy worker sends a quarter of a second of audio in milliseconds, and one looping on a
/// hostile file or stopped would otherwise hold a decoding turn other callers wait for. A worker
/// that sends nothing that long is killed, and the recognition fails with `UnreadableFile`; a
/// worker that ends without `E` or `F` failed, and its end (the signal: SIGSEGV, SIGABRT, SIGKILL,
/// SIGSYS for a forbidden call) names why. The service closes its end when it no longer wants the
/// file (a stop, a cancel, a caller gone): the worker's next write fails and it exits; the service
/// reaps it, killing it if it has not gone within `worker-reap` (1 s).
///
/// # Mode `audio-stream`
///
/// `voicebox-worker audio-stream --parent PID --encoding s16le|f32le --rate HZ --channels N
/// [--offset BYTES]`
/// - standard input: the caller's stream (Recognize's `stream`), checked by the service: its own
///   description of a pipe, or the caller's stream socket or regular file (read with pread(2)
///   from `--offset`, so the caller's offset stays where it was).
/// - standard output, standard error, environment and `--parent` as for `audio-file`.
/// - Messages: as `audio-file`'s without the header: any number of `S` samples (16 kHz mono,
///   sent as soon as a read of the stream makes any), then `E` at the stream's end (or its writer
///   resetting its connection) or `F` with why the stream cannot be read (a NaN or infinite
///   float, a partial frame at the end, a failed read), meant for the caller; then it exits 0.
/// - No bound on the worker's messages: the caller's writer may be silent as long as its
///   `stream_idle_seconds`, which the service counts on the samples it receives, as it does for a
///   stream it reads itself. The service closes its end (and kills the worker) when it no longer
///   wants the stream.
///
/// # Mode `decoder`
///
/// ## Starting
/// `voicebox-worker decoder --parent PID --language TAG --acoustic DIR --dictionary FILE
/// [--language-model FILE] [--log all]`
/// - descriptor 3: one end of a stream socket pair; the service holds the other. Requests come
///   in, answers go out. (Not standard output: pocketsphinx prints a grammar it cannot parse
///   there.)
/// - standard output and error: diagnostics only. Environment and `--parent` as for `audio-file`.
/// - It confines itself first (here opening files read-only is allowed: it reads its model), then
///   loads the model, then limits its data to `decoderDataLimit`: with `--language-model` the n-gram model for dictation, else only the
///   acoustic model and dictionary (grammars, keyphrases, confirmations).
/// - Then it sends `loaded`, or `failure` and exits 1. The service waits at most `worker-model-load`
///   (15 s: the n-gram model takes 0.5 s on an idle core; this leaves room for four loads on two
///   loaded cores under the sanitizers). A load holds the recognition's decoding turn meanwhile.
/// - `log` messages may come at any time, before an answer: a level byte and a line. `e`: an
///   error of the engine, as a reason a person can act on, sent at once (so a model that makes
///   the engine exit or crash is named); `i`: any line of the engine's log as it is, only with
///   `--log all` (the service's debug log).
///
/// ## Requests (service → worker), one at a time, each answered by exactly one answer
/// (any number of `log` lines may come before it):
/// - `C` configure: a new recognition. Payload: `Payload` fields language (string), grammar
///   (string, "" for none), keyphrases (string, one a line, "" for none), keyphrase threshold
///   (double), hint (string: dictation, search, confirmation). Ends the previous one.
///   Answer: `ready` with the decoder's detector warm-up and speech-end delay (two doubles), or
///   `failure`.
/// - `A` audio: 16 kHz mono signed 16-bit little-endian samples. Answer: `voice`, one byte, 1 when
///   the detector hears speech at the end of them; or `failure`.
/// - `Q` partial: the best guess so far. Answer: `text` (UTF-8, empty for none).
/// - `E` end: ends the utterance. Answer: `result`: text (string), confidence (double), a word
///   count (UInt32) and per word: word (string), start, end, confidence (doubles, seconds since
///   the recognition's first sample); or `failure`.
/// - `D` discard: ends the utterance without a result. Answer: `ready` (as for `C`) or `failure`.
/// - `K` hearing: how the utterances from the next on are heard (`SpeechDecoder.hearNext`). Payload:
///   two bytes, searching (1: look for words; 0: only hear the audio, adapting to it as a search
///   would, for no words and a small part of the cost) and new stream (1: start over as a fresh
///   decoder, the clock from 0). Answer: `ready` (as for `C`) or `failure`.
/// A `failure` to a request is a payload of one kind byte (`g` a grammar the engine refuses, `a`
/// an argument it refuses, `e` the engine failed) and the reason; the worker stays usable.
///
/// ## Bounds and ends
/// The service waits at most `answerBound(forSamples:base:)` for an answer (`worker-answer`, 10 s,
/// plus 10 times the audio sent); a worker that does not answer within it is killed, one that ends
/// is named by how it ended (the signal), and either way that recognition fails with
/// `EngineUnavailable`. A cancelled recognition's worker is killed if it has not answered within
/// `worker-cancel` (0.25 s). The service keeps idle workers warm, one
/// process per recognition at a time, and kills them after its `--model-idle`. Closing the socket
/// ends a worker (its next read sees the end and it exits 0).
public enum WorkerProtocol {
    public static let version = 4
    public static let executableName = "voicebox-worker"
    public static let audioFileMode = "audio-file"
    public static let audioStreamMode = "audio-stream"
    public static let decoderMode = "decoder"

    public enum Tag: UInt8, Sendable {
        // audio-file, worker → service
        case header = 0x48   // H
        case samples = 0x53  // S
        case end = 0x45      // E (also the decoder's "end the utterance" request)
        case failure = 0x46  // F (both modes)
        // decoder, service → worker
        case configure = 0x43  // C
        case audio = 0x41      // A
        case partial = 0x51    // Q
        case discard = 0x44    // D
        case hearing = 0x4B    // K
        // decoder, worker → service
        case loaded = 0x4C   // L
        case log = 0x57      // W
        case ready = 0x59    // Y
        case voice = 0x56    // V
        case text = 0x54     // T
        case result = 0x52   // R
    }

    /// A decoder worker's data (heap and private mappings) is limited to this once its model is
    /// loaded (RLIMIT_DATA): a grammar whose network explodes (rules that double each other) ends
    /// that worker with an allocation failure instead of taking the machine's memory.
    public static let decoderDataLimit = 1 << 30

    /// The longest the service waits for a decoder's answer to a request carrying `samples`:
    /// `base` (`worker-answer`) and 10 times the audio. Decoding takes a third to a half of the
    /// audio's duration on one free core; the bound leaves room for every core being shared by
    /// four decoders, and for the sanitizers.
    public static func answerBound(forSamples samples: Int, base: Duration) -> Duration {
        base + .milliseconds(samples * 10_000 / 16_000)
    }

    /// A samples message holds at most this many bytes (and so does any other).
    public static let maximumPayload = 1 << 20
    /// Samples per message the worker sends (a quarter of a second).
    public static let samplesPerMessage = 4_000

    /// One message, encoded: tag, length, payload.
    public static func encode(_ tag: Tag, _ payload: UnsafeRawBufferPointer) -> [UInt8] {
        precondition(payload.count <= maximumPayload)
        return FrameReader.frame(tag: tag.rawValue, payload)
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

    /// Decodes a samples payload (signed 16-bit little-endian); nil for an odd length.
    public static func samples(fromPayload payload: some Collection<UInt8>) -> [Int16]? {
        guard payload.count % 2 == 0 else { return nil }
        var samples = [Int16](repeating: 0, count: payload.count / 2)
        samples.withUnsafeMutableBytes { $0.copyBytes(from: payload) }
        return samples.map { Int16(littleEndian: $0) }
    }

    /// The fields of a payload, in order: little-endian integers and doubles, strings as a UInt32
    /// length and UTF-8 bytes.
    public struct Payload {
        public private(set) var bytes: [UInt8] = []
        private var offset = 0

        public init() {}
        public init(_ bytes: [UInt8]) { self.bytes = bytes }

        public mutating func append(_ value: UInt32) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        public mutating func append(_ value: Double) {
            withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        }
        public mutating func append(_ value: String) {
            let utf8 = Array(value.utf8)
            append(UInt32(utf8.count))
            bytes.append(contentsOf: utf8)
        }

        /// nil when the payload ends before the field.
        public mutating func uint32() -> UInt32? {
            guard bytes.count - offset >= 4 else { return nil }
            var value: UInt32 = 0
            for index in 0..<4 { value |= UInt32(bytes[offset + index]) << (8 * UInt32(index)) }
            offset += 4
            return value
        }
        public mutating func double() -> Double? {
            guard bytes.count - offset >= 8 else { return nil }
            var bits: UInt64 = 0
            for index in 0..<8 { bits |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
            offset += 8
            return Double(bitPattern: bits)
        }
        public mutating func string() -> String? {
            guard let count = uint32().map(Int.init), bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return String(decoding: bytes[offset..<(offset + count)], as: UTF8.self)
        }
    }

    /// A decoder worker's `failure` payload: the kind byte and the reason.
    public static func decoderFailure(kind: UInt8, _ reason: String) -> [UInt8] {
        encode(.failure, [kind] + Array(reason.utf8.prefix(4096)))
    }
}
