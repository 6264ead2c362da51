import VoiceboxContract

/// Listening: one utterance from a microphone, ended by trailing silence, `max_seconds`, or a request.
extension RecognitionRun {
    func listen(source: String?) async throws(VoiceboxError) -> Recognition {
        // A grammar or key phrases the caller wrote are checked by loading them first, so that
        // the microphone opens (and others pause) only for a recognition that can run. Without
        // them the model loads while the microphone records: a model loaded again after
        // `model-idle` takes about 0.5 s, and what is said meanwhile waits in the recording's
        // stream (seconds of it) to be decoded once it has loaded, so RecognitionStarted, and the
        // words after it, need not wait for the load.
        let checksCallerInput = options.grammar != nil || options.keyphrases != nil
        var loaded: (any SpeechDecoder)? = checksCallerInput ? try await makeDecoder() : nil
        if let early = try endedBeforeStart() { return early }
        let loading = loaded == nil ? startLoading() : nil
        let microphone: any CaptureStream
        switch try await openMicrophone(source, discardingOnFailure: loading) {
        case .open(let opened): microphone = opened
        case .ended(let early): return early
        }
        if let loading {
            do throws(VoiceboxError) {
                try await loading.value.get()
            } catch {
                await release(microphone)
                throw error
            }
            (loaded, earlyDecoder) = (earlyDecoder, nil)
        }
        guard let decoder = loaded else { preconditionFailure("a decoder was loaded above") }

        var live = LiveAudio(decoder: decoder, options: options)
        var (end, fault) = await hear(microphone, through: decoder, &live)

        // Release the microphone before anything else: the answer can wait a few milliseconds,
        // the recording (and its indicator) should not.
        let recordingFailure = await microphone.failure
        await release(microphone)

        if let fault { throw fault }
        switch control.request {
        case .cancel: throw RecognitionFault.cancelled
        case .stop: end = .stopped  // also when the audio taken before the stop ended its utterance
        case .interrupt: end = end ?? .interrupted
        case nil: break
        }
        guard let end else {
            // The recording ended by itself: the server went away or the source was removed.
            throw RecognitionFault.describe(recordingFailure ?? CaptureError.failed("the recording ended unexpectedly"),
                                            options: options)
        }
        let result = try finish(decoder)
        return Recognition(id: id, result: result, duration: live.elapsedSeconds, end: end, language: language)
    }

    private enum Opening {
        case open(any CaptureStream)
        /// Stopped or cancelled before the microphone was attached: the answer.
        case ended(Recognition)
    }

    /// Pauses others (so that the microphone does not hear them), opens the microphone, and
    /// announces the recognition (Listening, RecognitionStarted). A load that is no longer wanted
    /// (`loading`) is waited for and its decoder let go.
    private func openMicrophone(_ source: String?, discardingOnFailure loading: Task<Result<Void, VoiceboxError>, Never>?)
        async throws(VoiceboxError) -> Opening {
        if let session = dependencies.session {
            await session.begin(.listening, id: id, policy: options.others ?? session.settings.listeningDefault)
        }
        let microphone: any CaptureStream
        do {
            microphone = try await dependencies.capture.open(source: source)
        } catch {
            await dependencies.session?.end(.listening, id: id)
            await discard(loading)
            throw RecognitionFault.describe(error, options: options)
        }
        guard control.attach(microphone) else {
            await microphone.close()
            await dependencies.session?.end(.listening, id: id)
            await discard(loading)
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

    /// Closes the microphone, clears Listening and lets others play again.
    private func release(_ microphone: any CaptureStream) async {
        control.detach()
        await microphone.close()
        dependencies.bus.publish(Speech1.listening, false)
        await dependencies.session?.end(.listening, id: id)
    }

    /// Loads this recognition's decoder in a task of this actor's, into `earlyDecoder`.
    private func startLoading() -> Task<Result<Void, VoiceboxError>, Never> {
        Task {
            do throws(VoiceboxError) {
                earlyDecoder = try await makeDecoder()
                return .success(())
            } catch {
                return .failure(error)
            }
        }
    }

    /// Waits for a load that is no longer wanted and lets its decoder go (back to the engine).
    private func discard(_ loading: Task<Result<Void, VoiceboxError>, Never>?) async {
        guard let loading else { return }
        _ = await loading.value
        earlyDecoder = nil
    }

    /// The microphone's chunks through the decoder until the utterance ends (its end), the
    /// recording ends, or a request comes; a decoding failure ends it too.
    ///
    /// A stop keeps what was said before it: the service closes the microphone it was handed with
    /// the stop (RecognitionControl.request), which ends the stream after the chunks it already
    /// holds, and those are still decoded (on a loaded machine the decoder can be a second or more
    /// behind the recording, and the last words would be lost). A cancel, or a call taking the
    /// audio, ends it at once.
    private func hear(_ microphone: any CaptureStream, through decoder: any SpeechDecoder,
                      _ live: inout LiveAudio) async -> (RecognitionEnd?, VoiceboxError?) {
        for await chunk in microphone.chunks {
            if let request = control.request, request != .stop { break }
            do throws(VoiceboxError) {
                if let end = try take(chunk, into: decoder, &live) { return (end, nil) }
            } catch {
                return (nil, error)
            }
        }
        return (nil, nil)
    }

    /// One chunk of live audio (the microphone's, or a stream that ends at the end of speech)
    /// through the decoder: dithered, the detector's warm-up kept from counting, the level and
    /// the partial text reported. Returns how the recognition ends, or nil to go on.
    func take(_ chunk: [Int16], into decoder: any SpeechDecoder, _ live: inout LiveAudio,
              after earlier: [RecognitionResult] = []) throws(VoiceboxError) -> RecognitionEnd? {
        live.meter.add(chunk)
        var samples = chunk
        live.dither.apply(&samples)
        let seconds = Double(samples.count) / Self.sampleRate
        let reported = try decode(decoder, samples)
        let (inSpeech, discard) = live.warmUp.feed(inSpeech: reported, seconds: seconds)
        if discard { try drop(decoder) }
        if live.levels.allow(at: .now) { dependencies.bus.emit(Speech1.audioLevel, id, live.meter.read()) }
        reportPartial(decoder, after: earlier)
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
