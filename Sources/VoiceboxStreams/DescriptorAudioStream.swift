import Glibc
import VoiceboxContract
import VoiceboxCore

/// Opens the caller's raw PCM streams (Recognize's option `stream`). One that is not 16 kHz mono
/// s16le is converted where it is read, by `converters` (a worker process): voiceboxd converts
/// nothing.
public struct DescriptorAudioStreams: AudioStreams {
    private let converters: (any StreamConverters)?

    public init(converters: (any StreamConverters)?) {
        self.converters = converters
    }

    public func open(_ input: StreamInput) throws -> any AudioStream {
        try DescriptorAudioStream(input, converters: converters)
    }
}

/// Raw little-endian PCM from a pipe, a stream socket or a regular file, read as 16 kHz mono:
/// s16le mono at 16 kHz as it is (its bytes are the samples), anything else as the samples its
/// converter sends (`StreamConversion`), which reads the caller's descriptor itself.
///
/// Reads never block: a pipe is opened anew through /proc as a description of our own, set
/// non-blocking (so another reader of the caller's pipe cannot leave us stuck in read(2)); a
/// socket is read with MSG_DONTWAIT; a converter's pipe is ours. Waiting is one poll(2) on the
/// stream and a pipe of our own that `wake()` writes to, bounded by the idle time: no spinning,
/// and no thread held for good.
final class DescriptorAudioStream: AudioStream {
    /// What the decoders take.
    static let sampleRate = 16_000

    private let input: StreamInput
    let kind: StreamDescriptorKind
    /// What is read: our own description of a pipe, the converter's pipe, else the call's descriptor.
    let descriptor: Int32
    /// The converter, for a stream that is not 16 kHz mono s16le, and the frames it sends.
    let conversion: (any StreamConversion)?
    var frames = FrameParser(maximumPayload: WorkerProtocol.maximumPayload)
    /// s16le read as it is: the odd byte of a sample split between writes.
    var oddByte: UInt8?
    /// The wake pipe: poll reads the first, `wake()` writes to the second.
    private let wakeDescriptor: Int32
    private let wakeWriter: Int32
    var pending = PendingSamples()
    var ended = false
    private var closed = false
    /// How long reads have waited for the writer, in all and since it last sent something, and
    /// how much audio it has sent (its frames): `allowance`.
    private var waited = Duration.zero
    var waitedSinceData = Duration.zero
    var framesReceived = 0
    /// The same since the reader last took a decoder (`startTurn`): `behindSinceDecoder`.
    private var waitedSinceDecoder = Duration.zero
    private var framesAtDecoder = 0
    /// When the stream last took its decoder (its turn, see `parking.turn`); nil before the first read.
    private var turnStarted: ContinuousClock.Instant?
    var parking: AudioStreamParking?
    private(set) var stop: AudioStreamStop?
    private(set) var writerIdle = false
    /// Where a regular file is read: from the caller's offset at the call, which is left alone.
    var fileOffset: off_t = 0

    init(_ input: StreamInput, converters: (any StreamConverters)?) throws {
        self.input = input
        kind = try StreamDescriptorKind(checking: input.descriptor)
        duration = kind == .file ? StreamDescriptorKind.remainingSeconds(of: input) : nil
        if kind == .file { fileOffset = max(0, lseek(input.descriptor, 0, SEEK_CUR)) }
        if input.isDecodersFormat {
            conversion = nil
            descriptor = kind == .pipe ? try Self.ownDescription(of: input.descriptor, flags: O_NONBLOCK) : input.descriptor
        } else {
            guard let converters else { throw RecognitionError.engineFailure("no converter for \(input.encoding.rawValue) streams") }
            // The converter's own description of a pipe (blocking: it has nothing else to do);
            // the caller's socket or file as it is, read there from our offset.
            let ownPipe = kind == .pipe
            let handed = ownPipe ? try Self.ownDescription(of: input.descriptor, flags: 0) : input.descriptor
            defer { if ownPipe { Glibc.close(handed) } }
            let started = try converters.convert(input, reading: handed, from: kind == .file ? Int64(fileOffset) : nil)
            _ = fcntl(started.output, F_SETFL, O_NONBLOCK)
            conversion = started
            descriptor = started.output
        }
        // pipe(2), then close-on-exec: Glibc's module has neither pipe2 nor eventfd. A child
        // started in between inherits the ends: ours (VoiceboxSpawn) close every inherited
        // descriptor; a speech-dispatcher that libspeechd autospawns at that moment keeps two
        // ends of a pipe nobody needs, which holds nothing up (the caller's stream is opened
        // close-on-exec).
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            let error = errno
            if let conversion { conversion.dismiss(finished: false) } else if kind == .pipe { Glibc.close(descriptor) }
            throw RecognitionError.engineFailure("pipe: \(Self.reason(error))")
        }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, O_NONBLOCK)
        }
        wakeDescriptor = ends[0]
        wakeWriter = ends[1]
    }

    deinit { close() }

    /// A regular file's length from where it is read; nil for a pipe or a socket.
    let duration: Double?

    var waker: AudioStreamWaker {
        let descriptor = wakeWriter
        return AudioStreamWaker {
            var one: UInt8 = 1
            _ = write(descriptor, &one, 1)  // a full pipe is already awake
        }
    }

    func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(wakeDescriptor)
        Glibc.close(wakeWriter)
        if let conversion { conversion.dismiss(finished: ended) } else if kind == .pipe { Glibc.close(descriptor) }
    }

    /// A description of the caller's pipe of our own, through /proc.
    private static func ownDescription(of descriptor: Int32, flags: Int32) throws -> Int32 {
        let own = Glibc.open("/proc/self/fd/\(descriptor)", O_RDONLY | O_CLOEXEC | flags)
        guard own >= 0 else { throw RecognitionError.invalidStream("cannot open the pipe for reading: \(reason(errno))") }
        return own
    }

    /// `maxSamples` samples, fewer only at the end, after an idle stall or a wake ([] then, once
    /// what was pending is taken).
    func read(maxSamples: Int) throws -> [Int16] {
        writerIdle = false
        takeTurns()
        while pending.count < maxSamples, !ended, stop == nil {
            guard try waitForData(parks: true) else { break }
            try fill(wanted: maxSamples - pending.count)
        }
        try takeInWhatWaits()
        return pending.take(maxSamples)
    }

    /// What the writer has already sent, taken in without waiting, up to `readAheadLimit`.
    private func takeInWhatWaits() throws {
        while pending.count < readAheadLimit, !ended, stop == nil {
            let (ready, _) = try pollOnce(upTo: .zero)
            guard ready == .data else { return }  // a wake is seen by the next wait
            try fill(wanted: readAheadLimit - pending.count)
        }
    }

    /// After a turn of `parking.turn`, the decoder goes back to the queue and the stream waits its
    /// turn again (at once when nobody waits): round-robin with others' files and streams.
    private func takeTurns() {
        guard let parking else { return }
        guard let started = turnStarted else {
            turnStarted = .now
            return
        }
        guard ContinuousClock.now - started >= parking.turn else { return }
        parking.park()
        if !parking.resume() { stop = .woken }
        turnStarted = .now
    }

    /// How much longer reads may wait for the writer: the idle bound since it last sent
    /// something (a stall), and no more than it takes to fall behind real time by the idle bound
    /// (the audio it has sent, less the time waited for it: a writer that trickles a few bytes
    /// now and then keeps the stream no longer than silence would). Only time spent waiting in
    /// poll counts, never time spent decoding: a writer held up by our own back-pressure (or by
    /// a turn for a decoder) is not behind.
    private var allowance: Duration {
        let idle = Duration.seconds(input.idleSeconds)
        return min(idle - waitedSinceData, .seconds(Double(framesReceived) / Double(Self.sampleRate)) + idle - waited)
    }

    func waitForWriter(upTo patience: Duration?) throws -> WriterWait {
        writerIdle = false
        guard !ended, stop == nil else { return .audio }
        guard try waitForData(parks: false, patience: patience) else { return stop == nil ? .silent : .stopped }
        return .audio
    }

    var readAheadLimit = 0 {
        didSet { if readAheadLimit > oldValue { pending.reserve(readAheadLimit + 32_768) } }  // a read brings up to 64 KiB
    }

    var hasEnded: Bool { ended }

    func takeBuffered() -> [Int16] { pending.take(.max) }

    var buffered: Int { pending.count }

    func startTurn() {
        turnStarted = .now
        waitedSinceDecoder = .zero
        framesAtDecoder = framesReceived
    }

    /// How far the writer has fallen behind real time since the reader took its decoder: time
    /// waited for it less the audio it sent. A writer that trickles a few bytes now and then
    /// (never silent for `parking.releaseAfter` at a stretch) falls behind as a silent one does,
    /// and gives the decoder back as soon; one that sent audio ahead has that much in hand.
    private var behindSinceDecoder: Duration {
        waitedSinceDecoder - .seconds(Double(framesReceived - framesAtDecoder) / Double(Self.sampleRate))
    }

    /// Waits until the stream has something (data, its end, an error); false when the writer
    /// fell behind by the idle bound or `wake()` came first (`stop` says which). While reading
    /// (`parks`), a wait longer than `parking.after` gives the decoder's turn back until the writer
    /// sends again, and one of `parking.releaseAfter` (or a writer that has fallen that far behind
    /// since the decoder was taken) comes back false with `writerIdle` set and the stream still
    /// parked, so that the reader can give the decoder itself back.
    private func waitForData(parks: Bool, patience: Duration? = nil) throws -> Bool {
        let parking = parks ? self.parking : nil
        var waitedNow = Duration.zero
        var parked = false
        while true {
            let idleLeft = allowance
            guard idleLeft > .zero else {
                stop = .idle
                return false
            }
            if let patience, waitedNow >= patience { return false }
            if let parking, parked, waitedNow >= parking.releaseAfter || behindSinceDecoder >= parking.releaseAfter {
                if pending.isEmpty {
                    writerIdle = true
                } else {
                    // What came before the silence is decoded first, in a turn of its own.
                    if !parking.resume() { stop = .woken }
                    turnStarted = .now
                }
                return false
            }
            var slice = idleLeft
            if let patience { slice = min(slice, max(.milliseconds(1), patience - waitedNow)) }
            if let parking {
                let next = parked ? parking.releaseAfter - max(waitedNow, behindSinceDecoder) : parking.after - waitedNow
                slice = min(slice, max(.milliseconds(1), next))
            }
            let (ready, spent) = try pollOnce(upTo: slice)
            waitedNow += spent
            if ready == .interrupted { continue }
            if ready == .woken {
                stop = .woken
                return false
            }
            if ready == .data {
                if parked, let parking {
                    guard parking.resume() else {
                        stop = .woken
                        return false
                    }
                    turnStarted = .now
                }
                return true
            }
            if let parking, !parked, waitedNow >= parking.after {
                parking.park()
                parked = true
            }
        }
    }

    private enum PollOutcome { case data, woken, timedOut, interrupted }

    /// One poll(2) on the stream and the wake pipe, for at most `slice`; the time it took counts
    /// as waited (for the idle bound, since data, since the decoder was taken).
    private func pollOnce(upTo slice: Duration) throws -> (PollOutcome, Duration) {
        var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeDescriptor, events: Int16(POLLIN), revents: 0)]
        let milliseconds = Int32(clamping: Int((slice / .milliseconds(1)).rounded(.up)))
        let before = ContinuousClock.now
        let ready = poll(&fds, 2, milliseconds)
        let spent = ContinuousClock.now - before
        waited += spent
        waitedSinceData += spent
        waitedSinceDecoder += spent
        if ready < 0 {
            if errno == EINTR { return (.interrupted, spent) }
            throw RecognitionError.invalidStream("poll failed: \(Self.reason(errno))")
        }
        if fds[1].revents != 0 { return (.woken, spent) }
        if fds[0].revents & Int16(POLLNVAL) != 0 { throw RecognitionError.invalidStream("the descriptor is not open") }
        return (fds[0].revents != 0 ? .data : .timedOut, spent)
    }

    static func reason(_ error: Int32) -> String { String(cString: strerror(error)) }
}
