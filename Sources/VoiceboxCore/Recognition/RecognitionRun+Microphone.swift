import VoiceboxContract

/// Listening: one utterance from a microphone, ended by trailing silence, `max_seconds`, or a request.
extension RecognitionRun {
    func listen(source: String?) async throws(VoiceboxError) -> Recognition {
        // The model loads while the microphone records (`recordWhileLoading`): a model loaded
        // again after `model-idle` takes about 0.3 s, and what is said meanwhile is decoded once
        // it has loaded, so RecognitionStarted, and the words after it, need not wait for the
        // load. It loads first (`loadFirst`), so that the microphone opens and others pause only
        // for a recognition that can run, when a grammar or key phrases of the caller's are to be
        // checked, or the model failed to load last time (a damaged one would pause others for
        // nothing on every attempt).
        var decoderFirst = options.grammar != nil || options.keyphrases != nil
        if !decoderFirst { decoderFirst = await dependencies.engine.failedToLoadLastTime(options.configuration(language: language)) }
        var loaded: (any SpeechDecoder)? = decoderFirst ? try await loadFirst() : nil
        if let early = try endedBeforeStart() { return early }
        let loading = loaded == nil ? startLoading() : nil
        let microphone: any CaptureStream
        switch try await openMicrophone(source) {
        case .open(let opened): microphone = opened
        case .ended(let early): return early
        }
        var recording = MicrophoneEvents(microphone, loading: loading)
        var released = false
        var pending: [[Int16]] = []
        if let loading {
            pending = try await recordWhileLoading(&recording, microphone, loading, released: &released)
            (loaded, earlyDecoder) = (earlyDecoder, nil)
        }
        guard let decoder = loaded else { preconditionFailure("a decoder was loaded above") }

        var live = LiveAudio(decoder: decoder, options: options)
        var (end, fault) = await hear(pending, then: &recording, through: decoder, &live)

        // Release the microphone before anything else: the answer can wait a few milliseconds,
        // the recording (and its indicator) should not.
        let recordingFailure = await microphone.failure
        await release(microphone, unless: &released)

        if let fault { throw fault }
        switch control.request {
        case .cancel: throw RecognitionFault.cancelled
        case .stop: end = .stopped  // also when the audio taken before the stop ended its utterance
        case .interrupt: end = end ?? .interrupted
        case nil: break
        }
        // Else the recording ended by itself: the server went away or the source was removed.
        guard let end else { throw recordingFailed(recordingFailure) }
        let result = try await finish(decoder)
        // The partials end with the answer's text, also where the last change came within 0.1 s
        // of the one before (a stop, or audio decoded in a burst once a model has loaded).
        reportPartial(heard: [result], whole: true)
        return Recognition(id: id, result: result, duration: live.elapsedSeconds, end: end, language: language)
    }

    private enum Opening {
        case open(any CaptureStream)
        /// Stopped or cancelled before the microphone was attached: the answer.
        case ended(Recognition)
    }

    /// Pauses others (so that the microphone does not hear them), opens the microphone, and
    /// announces the recognition (Listening, RecognitionStarted). A model still loading when this
    /// fails is not waited for: its decoder goes back to the engine once loaded.
    private func openMicrophone(_ source: String?) async throws(VoiceboxError) -> Opening {
        if let session = dependencies.session {
            await session.begin(.listening, id: id, policy: options.others ?? session.settings.listeningDefault)
        }
        let microphone: any CaptureStream
        do {
            microphone = try await dependencies.capture.open(source: source)
        } catch {
            await dependencies.session?.end(.listening, id: id)
            throw RecognitionFault.describe(error, options: options)
        }
        guard control.attach(microphone) else {
            await microphone.close()
            await dependencies.session?.end(.listening, id: id)
            return .ended(try endedBeforeStart() ?? Recognition(id: id, result: .empty, duration: 0, end: .stopped, language: language))
        }
        // A call took the audio before the microphone opened: hold it from the start.
        if control.isHeldByCall { await microphone.setCorked(true) }
        // Only one microphone recognition runs at a time (the service sees to it, and frees the
        // slot only once this returns), so Listening can be set from here without a race.
        dependencies.bus.publish(Speech1.listening, true)
        begin()
        return .open(microphone)
    }

    /// Releases the microphone unless `released` says it was already, and notes that it is.
    func release(_ microphone: any CaptureStream, unless released: inout Bool) async {
        guard !released else { return }
        released = true
        await release(microphone)
    }

    /// The error for a recording that ended by itself (`failure`: why, if the capture said).
    func recordingFailed(_ failure: CaptureError?) -> VoiceboxError {
        RecognitionFault.describe(failure ?? CaptureError.failed("the recording ended unexpectedly"), options: options)
    }

    /// Closes the microphone, clears Listening, lets others play again, and frees the microphone
    /// for the next recognition (ListeningID, DictationID), Listening already false.
    func release(_ microphone: any CaptureStream) async {
        control.detach()
        await microphone.close()
        dependencies.bus.publish(Speech1.listening, false)
        await dependencies.session?.end(.listening, id: id)
        control.microphoneReleased?()
    }

    /// The chunks kept while the model loaded (`pending`), then the microphone's, through the
    /// decoder until the utterance ends (its end), the recording ends, or a cancel comes; a
    /// decoding failure ends it too.
    ///
    /// A stop keeps what was said before it: the service closes the microphone it was handed with
    /// the stop (RecognitionControl.request), which ends the stream after the chunks it already
    /// holds, and those are still decoded (on a loaded machine the decoder can be a second or more
    /// behind the recording, and the last words would be lost). So does a call that held the
    /// microphone too long (`interrupt`): what was recorded before the call is decoded. A cancel
    /// ends it at once.
    private func hear(_ pending: [[Int16]], then recording: inout MicrophoneEvents, through decoder: any SpeechDecoder,
                      _ live: inout LiveAudio) async -> (RecognitionEnd?, VoiceboxError?) {
        var pending = pending[...]
        while true {
            let chunk: [Int16]
            if let kept = pending.popFirst() {
                chunk = kept
            } else if let next = await recording.nextChunk() {
                chunk = next
            } else {
                return (nil, nil)
            }
            if control.request == .cancel { return (nil, nil) }
            do throws(VoiceboxError) {
                if let end = try await take(chunk, into: decoder, &live) { return (end, nil) }
            } catch {
                return (nil, error)
            }
        }
    }

    /// One chunk of live audio (the microphone's, or a stream that ends at the end of speech)
    /// through the decoder: dithered, the detector's warm-up kept from counting, the level and
    /// the partial text reported. Returns how the recognition ends, or nil to go on.
    func take(_ chunk: [Int16], into decoder: any SpeechDecoder, _ live: inout LiveAudio,
              after earlier: [RecognitionResult] = []) async throws(VoiceboxError) -> RecognitionEnd? {
        live.meter.add(chunk)
        var samples = chunk
        live.dither.apply(&samples)
        let seconds = Double(samples.count) / Self.sampleRate
        let reported = try await decode(decoder, samples)
        let (inSpeech, discard) = live.warmUp.feed(inSpeech: reported, seconds: seconds)
        if discard { try await drop(decoder) }
        if live.levels.allow(at: .now) { dependencies.bus.emit(Speech1.audioLevel, id, live.meter.read()) }
        await reportPartial(decoder, after: earlier)
        switch live.endpointer.feed(inSpeech: inSpeech, seconds: seconds) {
        case .continue: return nil
        case .endpoint: return .endpoint
        case .maxDuration: return .maxDuration
        }
    }
}

/// What a live recognition keeps between chunks.
struct LiveAudio {
    var endpointer: Endpointer
    var warmUp: DetectorWarmUp
    var meter = LevelMeter()
    var dither = Dither()
    var levels = RateLimiter(perSecond: 20)

    init(decoder: any SpeechDecoder, options: RecognizeOptions) {
        // The detector reports silence only `speechEndDelay` after speech ends: count from the real end.
        endpointer = Endpointer(silenceSeconds: max(0, options.silenceSeconds - decoder.speechEndDelay),
                                maxSeconds: options.maxSeconds)
        warmUp = DetectorWarmUp(seconds: decoder.detectorWarmUp)
    }

    var elapsedSeconds: Double { endpointer.elapsedSeconds }
}
