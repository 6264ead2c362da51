import VoiceboxContract

/// A microphone recognition whose model is still loading: the microphone records meanwhile, and
/// the recognition answers what happens to the recording at once, not once the model has loaded
/// (a load takes about 0.3 s, and up to `worker-model-load` on a machine that is swapping).
extension RecognitionRun {
    /// At most this many chunks are kept while the model loads (about 20 s at 20 ms a chunk, as
    /// the microphone's own stream keeps); past it the oldest go.
    static let chunksKeptWhileLoading = 1024

    /// Loads this recognition's decoder in a task of this actor's, into `earlyDecoder`. A
    /// recognition that ends before it has loaded does not wait for it: its decoder goes back to
    /// the engine once loaded.
    func startLoading() -> Task<Result<Void, VoiceboxError>, Never> {
        Task {
            do throws(VoiceboxError) {
                earlyDecoder = try await makeDecoder()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
    }

    /// Makes the decoder before anything opens (a grammar or key phrases to check, a model that
    /// failed last time); nil when a request came first or meanwhile: the recognition then ends at
    /// once (`endedBeforeStart`), the load left to finish by itself.
    func loadFirst() async throws(VoiceboxError) -> (any SpeechDecoder)? {
        let loading = startLoading()
        var waiting = MicrophoneEvents(nil, loading: loading)
        control.attachLoadWait(waiting.waker)
        defer { control.detachLoadWait() }
        while control.request == nil, let event = await waiting.next() {
            guard case .modelLoaded = event, control.request == nil else { continue }
            try await loading.value.get()
            defer { earlyDecoder = nil }
            return earlyDecoder
        }
        return nil
    }

    /// Keeps the microphone's chunks until the model has loaded and returns them. Meanwhile:
    /// - a cancel (the caller's, or its leaving the bus) releases the microphone and fails now;
    /// - a stop, or a call that held the microphone too long, releases it now (Listening false,
    ///   others playing again); what was recorded is decoded once the model has loaded;
    /// - `max_seconds` of audio recorded releases it too;
    /// - a recording that fails by itself (the sound server gone) fails now;
    /// - a model that fails to load releases it and fails.
    /// `released`: whether the microphone was released here.
    func recordWhileLoading(_ recording: inout MicrophoneEvents, _ microphone: any CaptureStream,
                            _ loading: Task<Result<Void, VoiceboxError>, Never>,
                            released: inout Bool) async throws(VoiceboxError) -> [[Int16]] {
        var kept: [[Int16]] = []
        var seconds = 0.0
        // A cancel after the microphone was released (a stop, max_seconds) has no recording to end.
        control.attachLoadWait(recording.waker)
        defer { control.detachLoadWait() }
        while let event = await recording.next() {
            if control.request == .cancel {
                await release(microphone, unless: &released)
                throw RecognitionFault.cancelled
            }
            switch event {
            case .requested:
                continue  // a stop or interrupt closed the microphone: its end comes next
            case .chunk(let chunk):
                if kept.count == Self.chunksKeptWhileLoading { kept.removeFirst() }
                kept.append(chunk)
                seconds += Double(chunk.count) / Self.sampleRate
                if let maxSeconds = options.maxSeconds, seconds >= maxSeconds {
                    await release(microphone, unless: &released)
                }
            case .recordingEnded:
                if released { continue }  // closed here for max_seconds
                let failure = await microphone.failure
                await release(microphone, unless: &released)
                // Closed by a stop or an interrupt (a cancel is seen above): decoded once loaded.
                guard control.request == nil else { continue }
                throw recordingFailed(failure)
            case .modelLoaded:
                do throws(VoiceboxError) {
                    try await loading.value.get()
                } catch {
                    await release(microphone, unless: &released)
                    throw error
                }
                return kept
            }
        }
        preconditionFailure("the model's load always ends with modelLoaded")
    }
}

/// What a microphone recognition waits for, in the order it happened: the microphone's chunks and
/// their end, and (while its model loads) the load's end. Relayed by two tasks into one stream,
/// so that one wait sees whichever comes first.
struct MicrophoneEvents {
    enum Event: Sendable {
        case chunk([Int16])
        /// The microphone's stream ended: it was closed (a request, or here), or the recording failed.
        case recordingEnded
        case modelLoaded
        /// A stop, cancel or interrupt came (`RecognitionControl.attachLoadWait`).
        case requested
    }

    /// Adds `.requested` to the events.
    let waker: AudioStreamWaker

    private var events: AsyncStream<Event>.Iterator
    private var recordingEnded = false
    /// Whether a load's end is still to come.
    private var loadPending: Bool

    /// `microphone` nil: only the load's end and requests (a decoder made before anything opens).
    init(_ microphone: (any CaptureStream)?, loading: Task<Result<Void, VoiceboxError>, Never>?) {
        // As many chunks as the microphone's own stream keeps; the load's end and the recording's
        // come after every chunk before them, so they are never the oldest dropped.
        let (events, sink) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(RecognitionRun.chunksKeptWhileLoading + 2))
        waker = AudioStreamWaker { sink.yield(.requested) }
        if let chunks = microphone?.chunks {
            Task {
                for await chunk in chunks { sink.yield(.chunk(chunk)) }
                sink.yield(.recordingEnded)
            }
        }
        if let loading {
            Task {
                _ = await loading.value
                sink.yield(.modelLoaded)
            }
        }
        self.events = events.makeAsyncIterator()
        loadPending = loading != nil
    }

    /// Runs on the caller's actor (the recognition's), which owns this.
    mutating func next(isolation actor: isolated (any Actor)? = #isolation) async -> Event? {
        guard !recordingEnded || loadPending else { return nil }
        let event = await events.next(isolation: actor)
        switch event {
        case .recordingEnded: recordingEnded = true
        case .modelLoaded: loadPending = false
        case .chunk, .requested, nil: break
        }
        return event
    }

    /// The next chunk, nil once the recording has ended (and the load, if one was waited for).
    mutating func nextChunk(isolation actor: isolated (any Actor)? = #isolation) async -> [Int16]? {
        while let event = await next(isolation: actor) {
            if case .chunk(let chunk) = event { return chunk }
        }
        return nil
    }
}
