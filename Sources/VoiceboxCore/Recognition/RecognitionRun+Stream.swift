import VoiceboxContract

/// Reading the caller's stream: as a file is read (to its end, cut into utterances at pauses, the
/// same words as the same audio in a file), or with `silence_seconds`, as the microphone is
/// listened to (ended at the end of speech). Either way a request, `max_seconds` or a writer
/// that stalls past the idle bound ends it with what was heard. The rest of one that comes far
/// faster than real time is decoded in parts, as a file's (`FastStream`).
extension RecognitionRun {
    /// Samples per read when the stream ends at the end of speech: 50 ms, the latency of a
    /// microphone chunk. (Read as a file, the file's chunk keeps the file's words.)
    static let liveChunk = 800

    func read(stream input: StreamInput) async throws(VoiceboxError) -> Recognition {
        // Stopped or cancelled while it waited for a turn: the stream is not even read.
        if let early = try endedBeforeStart() { return early }
        let stream = try open(input)
        defer { stream.close() }
        guard control.attach(stream.waker) else {
            return try endedBeforeStart() ?? Recognition(id: id, result: .empty, duration: 0, end: .stopped, language: language)
        }
        // Before `stream.close()` (deferred above, so it runs after this): no wake after the close.
        defer { control.detachStream() }
        if let policy = options.others, let session = dependencies.session {
            await session.begin(.listening, id: id, policy: policy)
        }
        begin()
        var heard = StreamHeard(live: nil, holds: StreamHolds(dependencies.bounds))
        var decoder: (any SpeechDecoder)?
        var fault: VoiceboxError?
        var inParts: Recognition?
        do throws(VoiceboxError) {
            if try await waitForFirstAudio(stream) {
                decoder = try await makeDecoder()
                if options.endsAtSilence { heard.live = LiveAudio(decoder: decoder!, options: options) }
                heard.fast = fastStream(stream)
                try await decodeInRounds(stream, &decoder, &heard)
                if heard.toParts, let fast = heard.fast, let own = decoder {
                    decoder = nil  // the parts' own lane's alone, so that it can give it back
                    let whole = fast.whole(stream)
                    inParts = try await readInParts(whole.samples, through: own, heard: (whole.decoded, heard.segments))
                }
            }
        } catch {
            fault = error
        }
        decoder = nil
        if options.others != nil { await dependencies.session?.end(.listening, id: id) }
        if let fault { throw fault }
        if let inParts { return inParts }
        var end = heard.end ?? .endOfFile
        switch control.request {
        case .cancel: throw RecognitionFault.cancelled
        case .stop, .interrupt: if end == .endOfFile { end = .stopped }
        case nil: if stream.stop == .idle { end = .timeout }
        }
        return Recognition(id: id, result: heard.result, duration: heard.secondsRead, end: end, language: language)
    }

    /// Rounds: each decodes until the stream ends, its writer stays silent (the stream is parked
    /// by then, its turn given back) or another caller's stream wants its decoder
    /// (`control.decoderWanted`) at a pause in the audio, where the utterance ends (or, asked so
    /// for `stream-cut` without a pause, inside speech: `mustCut`). While the writer is silent the
    /// decoder goes back to the pool too: a file's way, the utterance ends there; listening for the
    /// end of speech, only before any speech, which it would cut. The stream waits for its writer
    /// holding only its place in the queue. `decoder` is nil while it is given back.
    private func decodeInRounds(_ stream: any AudioStream, _ decoder: inout (any SpeechDecoder)?,
                                _ heard: inout StreamHeard) async throws(VoiceboxError) {
        while true {
            if decoder == nil {
                let fresh = try await makeDecoder()
                try await startRound(with: fresh, &heard)
                decoder = fresh
            }
            // A whole turn from now, with a core and a decoder.
            stream.startTurn()
            if heard.live != nil {
                try await listen(to: stream, decoder!, &heard)
            } else {
                try await readToTheEnd(stream, decoder!, &heard)
            }
            guard heard.end == nil, control.request == nil, !heard.toParts else { break }
            if heard.yielded {
                // Its decoder to the stream that waits for one; its next turn with a fresh one.
                heard.yielded = false
                decoder = nil
                await control.parking?.park()
                await control.parking?.release()
                guard await control.parking?.resume() ?? true else { break }
                continue
            }
            guard stream.writerIdle else { break }
            if heard.live.map({ !$0.endpointer.heardSpeech }) ?? true {
                decoder = nil
                await control.parking?.release()
            }
            guard try waitForWriter(stream, holdingDecoder: decoder != nil, &heard) else { break }
            guard await control.parking?.resume() ?? true else { break }
        }
        if let decoder, heard.live != nil { heard.segments.append(try await finish(decoder).shifted(by: heard.roundStart)) }
    }

    /// While the writer is silent: whether it sent audio again (true), or the stream ended or,
    /// holding its decoder after speech, another caller's stream wants it (false). Holding it, the
    /// stream looks every turn (`stream-turn`): then the writer's silence ends the utterance as
    /// silence would.
    private func waitForWriter(_ stream: any AudioStream, holdingDecoder: Bool,
                               _ heard: inout StreamHeard) throws(VoiceboxError) -> Bool {
        while true {
            let waited: WriterWait
            do { waited = try stream.waitForWriter(upTo: holdingDecoder ? dependencies.bounds[.streamTurn] : nil) } catch {
                throw RecognitionFault.describe(error, options: options)
            }
            switch waited {
            case .audio: return true
            case .stopped: return false
            case .silent:
                guard control.decoderWanted else { continue }
                heard.end = .endpoint
                return false
            }
        }
    }

    /// Starts a round with a fresh decoder: its clock and utterance start here. Listening, it
    /// learns the background noise again. Taking over after speech, or after 1.8 s of audio, it
    /// hears the last 1.8 s first and forgets them but the noise (in a pause, all but a word's
    /// onset: `StreamHeard.hearFirst`), so that no warm-up hides the speech to come nor counts its
    /// own false start as speech; its clock starts with them.
    private func startRound(with fresh: any SpeechDecoder, _ heard: inout StreamHeard) async throws(VoiceboxError) {
        heard.decoderTaken = .now
        heard.decoderHeardAll = false
        heard.roundStart = heard.seconds
        heard.utteranceSeconds = 0
        guard let live = heard.live else { return }
        if !heard.recent.isEmpty, live.endpointer.heardSpeech || heard.recent.count == StreamHeard.recentSamples {
            do { try await StreamHeard.hearFirst(heard.recent, into: fresh, inPauseAfterSpeech: live.endpointer.inPauseAfterSpeech) } catch {
                throw RecognitionFault.describe(error, options: options)
            }
            heard.roundStart -= Double(heard.recent.count) / Self.sampleRate
            heard.live?.warmUp = DetectorWarmUp(seconds: 0)
        } else {
            heard.live?.warmUp = DetectorWarmUp(seconds: fresh.detectorWarmUp)
        }
    }

    /// Read as a file, an utterance cut for another caller's stream is heard again whole by the
    /// next decoder when it is no longer than this (its audio is kept meanwhile: 320 KB, within
    /// `RecognitionService.replayBudgetBytes` for all streams): a
    /// fresh decoder that starts inside speech takes the speech for the background noise and
    /// loses words. Longer ones (speech without a half-second pause) end at the cut.
    static let replaySeconds = 10.0

    var streamLimit: Double { options.maxSeconds ?? RecognizeOptions.maximumSeconds }

    /// One round as a file: `FileReading`'s loop, with the live signals a stream's caller wants,
    /// until the stream ends or its writer falls silent.
    private func readToTheEnd(_ stream: any AudioStream, _ decoder: any SpeechDecoder, _ heard: inout StreamHeard)
        async throws(VoiceboxError) {
        var meter = LevelMeter()
        var levels = RateLimiter(perSecond: 20)
        // A new decoder for an utterance cut before: it hears it again, so what the last one
        // heard of it is dropped.
        let fast = heard.fast
        let audio = ReplayedAudio(heard.unfinished, then: MeteredAudio(stream) { samples in
            meter.add(samples)
            fast?.took(samples, from: stream)
        })
        // Parts for the rest only where this decoder has heard it all, one pass's way.
        let partsPossible = fast != nil && heard.decoderHeardAll && heard.unfinished == nil
        var toParts = false
        heard.unfinished = nil
        let earlier = heard.segments
        let offset = heard.seconds
        do {
            let reading = try await FileReading.read(audio, through: decoder, maxSeconds: streamLimit - offset, shouldStop: {
                switch control.request {
                case .cancel: throw RecognitionFault.cancelled
                case .stop, .interrupt: true
                case nil: false
                }
            }, afterChunk: { _, segments in
                // Not while a cut utterance is heard again: that audio was metered when it came.
                if !audio.replaying, levels.allow(at: .now) { dependencies.bus.emit(Speech1.audioLevel, id, meter.read()) }
                await reportPartial(decoder, after: earlier + segments)
            }, yieldAtPause: {
                !audio.replaying && heard.shouldYield(control)
            }, yieldInSpeech: {
                // The hold counts from the end of the replay, so that each round gets further.
                guard !audio.replaying else { return false }
                if let replayed = audio.replayEnded, replayed > heard.decoderTaken { heard.decoderTaken = replayed }
                return heard.mustCut(control)
            }, replaySeconds: Self.replaySeconds, yieldAtUtteranceEnd: {
                toParts = partsPossible && !audio.replaying && fast!.partsWanted(stream)
                return toParts
            })
            // Stopped before the replay was through: what the last decoder heard of it stands.
            if let cut = audio.takeBack() {
                heard.unfinished = cut
                return
            }
            record(reading, offset: offset, toParts: toParts, into: &heard)
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
    }

    /// What a round as a file heard, word times from the stream's start; an utterance it was cut
    /// inside is kept for the next decoder to hear again, within the replay budget.
    private func record(_ reading: FileReading.Outcome, offset: Double, toParts: Bool, into heard: inout StreamHeard) {
        heard.segments += reading.segments.map { $0.shifted(by: offset) }
        heard.seconds += reading.seconds
        heard.yielded = reading.yielded && !toParts
        heard.toParts = toParts
        if var utterance = reading.unfinished {
            utterance.heard = utterance.heard.shifted(by: offset)
            if let hold = dependencies.replays.hold(utterance.audio.count * MemoryBudget.bytesPerSample) {
                heard.unfinished = StreamHeard.Unfinished(utterance: utterance, hold: hold)
            } else {
                // The budget is spent (many streams cut at once): cut where it is.
                heard.segments.append(utterance.heard)
                heard.seconds += utterance.seconds
            }
        }
        if reading.end == .maxDuration { heard.end = .maxDuration }
    }

    /// One round as the microphone: one utterance, ended by trailing silence, or by the stream's
    /// end or its writer falling silent.
    private func listen(to stream: any AudioStream, _ decoder: any SpeechDecoder, _ heard: inout StreamHeard)
        async throws(VoiceboxError) {
        guard var live = heard.live else { return }
        defer { heard.live = live }
        live.endpointer.maxSeconds = streamLimit
        while control.request == nil {
            let chunk: [Int16]
            do { chunk = try stream.read(maxSamples: Self.liveChunk) } catch { throw RecognitionFault.describe(error, options: options) }
            if chunk.isEmpty { break }
            if let decided = try await take(chunk, into: decoder, &live, after: heard.segments) {
                heard.end = decided
                break
            }
            heard.keepRecent(chunk)
            // No utterance of the decoder grows past 30 s (its memory, and the search that ends
            // it, grow with it): past that it is cut at the next pause after speech, as a file's
            // are, or at 60 s of unbroken speech; noise before any speech is dropped.
            heard.utteranceSeconds += Double(chunk.count) / Self.sampleRate
            if heard.utteranceSeconds >= FileReading.maxSegmentSeconds {
                if !live.endpointer.heardSpeech {
                    try await drop(decoder)
                    heard.utteranceSeconds = 0
                } else if live.endpointer.trailingSilenceSeconds > 0 || heard.utteranceSeconds >= 2 * FileReading.maxSegmentSeconds {
                    heard.segments.append(try await finish(decoder).shifted(by: heard.roundStart))
                    heard.utteranceSeconds = 0
                    // A cut is also where another caller's stream may have the decoder.
                    if heard.shouldYield(control) {
                        heard.yielded = true
                        break
                    }
                }
            }
            // In a pause after speech, another caller's stream may have the decoder: what was said
            // so far is kept, and a fresh decoder hears the rest. Never before any speech, nor in
            // the detector's warm-up: a fresh decoder would warm up again, and speech said within
            // a warm-up is not heard (the red team lost whole utterances so). When no pause came
            // soon enough (unbroken speech, or noise before any), it is cut here all the same, and
            // the fresh decoder hears the last 1.8 s first.
            if live.warmUp.isOver, live.endpointer.inPauseAfterSpeech && heard.shouldYield(control) || heard.mustCut(control) {
                if live.endpointer.heardSpeech {
                    heard.segments.append(try await finish(decoder).shifted(by: heard.roundStart))
                }
                heard.yielded = true
                break
            }
        }
        heard.seconds = live.elapsedSeconds
        if control.request == .cancel { throw RecognitionFault.cancelled }
    }
}
