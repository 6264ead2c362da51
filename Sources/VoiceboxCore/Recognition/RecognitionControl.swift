import VoiceboxThreads

/// How StopRecognition and CancelRecognition reach a recognition that is busy decoding on its
/// own queue: a flag its loop checks at every chunk, and the open microphone, which is closed
/// at once so that a loop waiting for audio wakes up (and the recording indicator goes away),
/// or the open stream's waker, which ends a read waiting for the writer.
final class RecognitionControl: Sendable {
    enum Request: Sendable, Equatable {
        /// Finish now with what was heard.
        case stop
        /// Finish now with nothing (Cancelled); also when the caller left the bus.
        case cancel
        /// Finish now with what was heard: a call held the microphone too long.
        case interrupt
    }

    private struct State {
        var request: Request?
        var microphone: (any CaptureStream)?
        var stream: AudioStreamWaker?
        /// Wakes a microphone recognition that waits for its model (`recordWhileLoading`).
        var loadWait: AudioStreamWaker?
        /// The recognition's decoders' interrupts, called on a cancel.
        var decoderInterrupts: [@Sendable () -> Void] = []
        var parking: StreamParking?
        var lanes: FileLanes?
        /// Tells the service the microphone is released (a microphone recognition's slot).
        var microphoneReleased: (@Sendable () -> Void)?
        /// A call has the audio: the microphone is to be corked, also one that opens later.
        var heldByCall = false
        /// Another caller's stream waits for the decoder this stream holds.
        var decoderWanted = false
        /// Since when this stream is the one asked to give it back even inside speech.
        var cutWantedSince: ContinuousClock.Instant?
    }

    private let state = Locked(State())

    var request: Request? { state.withLock { $0.request } }

    /// Records a request and returns the microphone to close, if one is open. A cancel
    /// overrides an earlier stop (the caller no longer wants the answer); not the other way round.
    func request(_ request: Request) -> (any CaptureStream)? {
        state.withLock { state in
            if state.request != .cancel { state.request = request }
            // Under the lock: `detachStream` cannot return (and the stream close) in between.
            state.stream?.wake()
            state.loadWait?.wake()
            // A decoder stuck in a worker would hold the answer until its bound (10 s and more).
            if state.request == .cancel { for interrupt in state.decoderInterrupts { interrupt() } }
            return state.microphone
        }
    }

    /// Registers the open microphone; false (and not kept) when a request came first, in which
    /// case the recognition must close it itself.
    func attach(_ microphone: any CaptureStream) -> Bool {
        state.withLock { state in
            guard state.request == nil else { return false }
            state.microphone = microphone
            return true
        }
    }

    /// Marks the recording as held by a call (or no longer); returns the open microphone, if any,
    /// to cork or uncork now. One that opens later is corked by its session (`isHeldByCall`).
    func holdForCall(_ held: Bool) -> (any CaptureStream)? {
        state.withLock { state in
            state.heldByCall = held
            return state.microphone
        }
    }

    /// Registers the open stream's waker; false (and not kept) when a request came first.
    func attach(_ stream: AudioStreamWaker) -> Bool {
        state.withLock { state in
            guard state.request == nil else { return false }
            state.stream = stream
            return true
        }
    }

    /// Registers a decoder's interrupt (`SpeechDecoder.interrupt`) for a cancel, called at once
    /// if the cancel came first. An interrupt outlives its decoder harmlessly.
    func attachDecoder(_ decoder: any SpeechDecoder) {
        guard let interrupt = decoder.interrupt else { return }
        let cancelled = state.withLock { state in
            state.decoderInterrupts.append(interrupt)
            return state.request == .cancel
        }
        if cancelled { interrupt() }
    }

    /// Has every request wake `waker` until `detachLoadWait` (also one that came before: then the
    /// caller looks at `request` itself).
    func attachLoadWait(_ waker: AudioStreamWaker) {
        state.withLock { $0.loadWait = waker }
    }

    func detachLoadWait() {
        state.withLock { $0.loadWait = nil }
    }

    /// After this returns no wake comes, so the stream may close.
    func detachStream() {
        state.withLock { $0.stream = nil }
    }

    /// How a stream gives its decoder back and takes it again (set by the service at admission).
    var parking: StreamParking? {
        get { state.withLock { $0.parking } }
        set { state.withLock { $0.parking = newValue } }
    }

    /// How a microphone recognition tells the service it has released the microphone (set by the
    /// service at admission): its slot is free from then on, also while the recognition still
    /// decodes what it recorded (a stop during a model's load).
    var microphoneReleased: (@Sendable () -> Void)? {
        get { state.withLock { $0.microphoneReleased } }
        set { state.withLock { $0.microphoneReleased = newValue } }
    }

    /// How a long file takes more cores (set by the service at admission).
    var lanes: FileLanes? {
        get { state.withLock { $0.lanes } }
        set { state.withLock { $0.lanes = newValue } }
    }

    var isHeldByCall: Bool { state.withLock { $0.heldByCall } }

    /// Set by the service while another caller's stream waits for a decoder that this stream
    /// holds: the stream gives it back at its next pause (see `RecognitionRun.read(stream:)`).
    var decoderWanted: Bool { state.withLock { $0.decoderWanted } }

    /// Since when the service asks this stream to give its decoder back even inside speech, if no
    /// pause comes first (it is the holder chosen for a waiting stream); nil while it does not.
    var cutWantedSince: ContinuousClock.Instant? { state.withLock { $0.cutWantedSince } }

    /// Set by the service whenever its queue moves: whether a waiting stream wants this stream's
    /// decoder at its next pause, and whether inside speech too (its time kept from the first ask).
    func wantDecoder(atPause: Bool, inSpeech: Bool) {
        state.withLock { state in
            state.decoderWanted = atPause || inSpeech
            state.cutWantedSince = inSpeech ? state.cutWantedSince ?? .now : nil
        }
    }

    func detach() {
        state.withLock { $0.microphone = nil }
    }
}

/// A stream's way back to the decoder queue: `park` gives its turn back, `release` (while
/// parked) its decoder too, `resume` waits for a turn again (false: the recognition was stopped
/// or cancelled meanwhile).
struct StreamParking: Sendable {
    let park: @Sendable () async -> Void
    let release: @Sendable () async -> Void
    let resume: @Sendable () async -> Bool
}

/// How a long file decodes on more cores than its own turn's: each further part takes a turn of
/// its own in the fair queue, as one more file of the same caller would, and gives it back when
/// that part is decoded, so that another caller's file waits at most about one part.
struct FileLanes: Sendable {
    /// How many parts may decode at once besides the recognition's own (the cores but one).
    let extra: Int
    /// Waits for a turn for one more part; nil when the recognition was stopped or cancelled, or
    /// the queue is full (the recognition then goes on with the turns it has).
    let take: @Sendable () async -> UInt64?
    let giveBack: @Sendable (UInt64) async -> Void
    /// No more turns are wanted: a `take` that waits gives nil at once, and later ones too.
    let close: @Sendable () async -> Void
    /// Whether another file or stream waits for a turn (not a part of a long file): a part that
    /// holds a turn of its own then gives it back at its next pause.
    let othersWait: @Sendable () -> Bool
}
