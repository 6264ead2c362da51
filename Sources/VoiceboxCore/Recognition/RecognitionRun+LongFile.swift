import VoiceboxContract

/// A long file on every core: cut at pauses into parts of at most about `file-part` (a minute), as
/// many for each core (`FileParts`), which
/// this recognition and up to a core's worth of helpers decode at once, each helper on a turn of
/// its own in the fair queue (`FileLanes`). A helper gives its turn back at its next pause when
/// another recognition waits, and the rest of its part goes back to the list. The parts'
/// utterances are joined in order.
///
/// The same words as one pass: a decoder adapts to what it has heard (pocketsphinx's cepstral
/// mean and its detector's noise floor), so a decoder started afresh at a cut hears the next
/// minute differently (3.8-5 % of words differed). So a lane first hears the file from its start
/// (or from where it stands) up to its part without searching, which costs a small part of a
/// search, and a part's decoding begins and ends where one pass is between utterances: the first
/// utterance end at or after its cut, which the lane before finds by reading on to it.
extension RecognitionRun {
    /// Files are cut into parts up to this long (the samples are held in memory, 32 kB a second:
    /// 38 MB at most); from `FileParts.minimumFileSeconds` on.
    static let partsMaximumSeconds = 1200.0

    /// How long files are cut: into parts of `file-part`.
    var fileParts: FileParts { FileParts(partSeconds: dependencies.bounds[.filePart].inSeconds) }

    /// Whether `file` is read in parts: long enough, short enough to hold, read whole, and more
    /// than one core to read it on.
    func readsInParts(_ file: any AudioFile) -> Bool {
        guard let lanes = control.lanes, lanes.extra > 0, let duration = file.duration,
              duration >= fileParts.minimumFileSeconds, duration <= Self.partsMaximumSeconds else { return false }
        return options.maxSeconds.map { $0 >= duration } ?? true
    }

    /// `samples` (a whole file, or a fast stream) in parts on every core. `heard`: what `decoder`
    /// has already decoded in one pass, from the first sample up to an utterance end (a fast
    /// stream's): the parts cover the rest, and `decoder` goes on from there.
    func readInParts(_ samples: [Int16], through decoder: consuming any SpeechDecoder,
                     heard before: (samples: Int, segments: [RecognitionResult])? = nil) async throws(VoiceboxError) -> Recognition {
        guard let lanes = control.lanes else { preconditionFailure("readsInParts and fastStream checked the lanes") }
        let cutting = fileParts, from = before?.samples ?? 0
        let ranges = cutting.ranges(of: samples, from: from,
                                    count: cutting.partCount(seconds: Double(samples.count - from) / Self.sampleRate,
                                                             lanes: lanes.extra + 1))
        let work = PartsWork(ranges, heard: before)
        let total = Double(samples.count) / Self.sampleRate
        let control = control
        let configuration = options.configuration(language: language)
        let engine = dependencies.engine
        // A helper's chunks, told to this recognition's own turn so that it reports progress and
        // partials once it has no part of its own left; ends when every helper is done.
        let (helperChunks, chunkDecoded) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let helpers = (0..<min(lanes.extra, ranges.count - 1)).map { _ in
            Task { () async throws -> Void in
                try await Self.helpDecode(samples, work: work, lanes: lanes, engine: engine, configuration: configuration,
                                          control: control, afterChunk: { chunkDecoded.yield() })
            }
        }
        var fault: VoiceboxError?
        var progress = RateLimiter(perSecond: 10)
        // Ours alone, so that a stream can give its decoder back between turns.
        var ownLane: PartDecoder? = PartDecoder(consume decoder, position: from)
        // This recognition's own turn decodes parts until none is left; then, once the helpers are
        // done, the rest of any part a helper gave back after that (a helper that gives its turn
        // back does not come back for it).
        do throws(VoiceboxError) {
            try await decodeOwnParts(work, of: samples, through: &ownLane, lanes: lanes, total: total, progress: &progress)
        } catch {
            fault = error
            work.abandon()
        }
        await lanes.close()  // no helper waits for a turn it no longer needs
        if let failed = await follow(helpers, chunks: helperChunks, ending: chunkDecoded, work: work, total: total,
                                     progress: &progress) {
            fault = fault ?? failed
        }
        if fault == nil {
            do throws(VoiceboxError) {
                try await decodeOwnParts(work, of: samples, through: &ownLane, lanes: lanes, total: total, progress: &progress)
            } catch { fault = error }
        }
        if let fault { throw fault }
        if control.request == .cancel { throw RecognitionFault.cancelled }
        let heard = work.heard()
        reportPartial(heard: heard.segments, whole: true)
        reportProgress(heard.complete ? 1 : heard.seconds / max(total, 1e-9))
        return Recognition(id: id, result: RecognitionResult(joining: heard.segments), duration: heard.seconds,
                           end: heard.complete ? .endOfFile : .stopped, language: language)
    }

    /// This recognition's own turn on its parts, until none is left. A file's holds its turn to the
    /// end, as any file does. A stream's (read ahead) takes turns as a stream that always has audio
    /// does: at a pause, once it has held its turn for a `stream-turn` while another recognition
    /// waits, it gives the turn back, and once it has held its decoder for a `stream-hold` while
    /// another caller's stream waits for one, the decoder too (`ownLane` is nil then: a fresh one
    /// hears the file again from its start up to its next part). It goes on when its turn comes
    /// again; the rest of its part may be a helper's by then.
    private func decodeOwnParts(_ work: PartsWork, of samples: [Int16], through ownLane: inout PartDecoder?,
                                lanes: FileLanes, total: Double, progress: inout RateLimiter) async throws(VoiceboxError) {
        guard let parking = control.parking else {
            if let lane = ownLane { _ = try await decodeWhatIsLeft(work, of: samples, through: lane, total: total, progress: &progress) }
            return
        }
        let turn = dependencies.bounds[.streamTurn], hold = dependencies.bounds[.streamHold]
        var decoderTaken = ContinuousClock.now
        while work.remaining {
            if ownLane == nil {
                ownLane = PartDecoder(try await makeDecoder())
                decoderTaken = .now
            }
            let turnStarted = ContinuousClock.now, control = control
            let givesDecoder = { control.decoderWanted && ContinuousClock.now - decoderTaken >= hold }
            let yielded = try await decodeWhatIsLeft(work, of: samples, through: ownLane!, total: total, progress: &progress,
                                               yieldAtPause: {
                givesDecoder() || ContinuousClock.now - turnStarted >= turn && lanes.othersWait()
            })
            guard yielded else { return }
            let release = givesDecoder()
            if release { ownLane = nil }
            await parking.park()
            if release { await parking.release() }
            // False: stopped or cancelled meanwhile, which the control says.
            guard await parking.resume() else { return }
        }
    }

    /// Decodes parts until none is left or one gives its rest back at a pause (true): progress as
    /// it goes, and partials once everything before a part is decoded (the text so far, in order).
    private func decodeWhatIsLeft(_ work: PartsWork, of samples: [Int16], through ownLane: PartDecoder, total: Double, progress: inout RateLimiter,
                                  yieldAtPause: () -> Bool = { false }) async throws(VoiceboxError) -> Bool {
        while let part = work.next() {
            do {
                let gaveBack = try await work.decode(part, of: samples, through: ownLane, control: control, yieldAtPause: yieldAtPause,
                                               afterChunk: { start, segments in
                    if total > 0, progress.allow(at: .now) {
                        reportProgress(work.secondsDecoded / total)
                    }
                    if let earlier = work.heard(before: start) {
                        await reportPartial(ownLane.decoder, after: earlier + segments)
                    }
                })
                if gaveBack { return true }
            } catch {
                throw RecognitionFault.describe(error, options: options)
            }
        }
        return false
    }

    /// A helper of a long file's recognition: on turns of its own in the fair queue, it decodes
    /// parts until none is left, with a decoder of its own made for its first part. The turn goes
    /// back however the part ends.
    private static func helpDecode(_ samples: [Int16], work: PartsWork, lanes: FileLanes, engine: any RecognitionEngine,
                                   configuration: RecognitionConfiguration, control: RecognitionControl,
                                   afterChunk: @escaping @Sendable () -> Void) async throws {
        var lane: PartLane?
        while work.remaining, let turn = await lanes.take() {
            var failure: (any Error)?  // no async defer: the turn goes back below
            let part = work.next()
            if let part {
                do {
                    if lane == nil {
                        let decoder = try await engine.makeDecoder(configuration)
                        control.attachDecoder(decoder)
                        lane = PartLane(decoder: decoder)
                    }
                    try await lane!.decode(part, of: samples, control: control, work: work, yieldAtPause: lanes.othersWait,
                                           afterChunk: afterChunk)
                } catch { failure = error }
            }
            await lanes.giveBack(turn)
            if let failure { throw failure }
            if part == nil { break }
        }
    }

    /// Progress and partials go on while the helpers finish their parts, after their chunks;
    /// then the first helper's failure, if one failed (the work is abandoned then).
    private func follow(_ helpers: [Task<Void, any Error>], chunks: AsyncStream<Void>, ending: AsyncStream<Void>.Continuation,
                        work: PartsWork, total: Double, progress: inout RateLimiter) async -> VoiceboxError? {
        Task {
            for helper in helpers { _ = try? await helper.value }
            ending.finish()
        }
        for await _ in chunks where progress.allow(at: .now) {
            if total > 0 { reportProgress(work.secondsDecoded / total) }
            reportPartial(heard: work.heardSoFar())
        }
        var fault: VoiceboxError?
        for helper in helpers {
            do { try await helper.value } catch {
                work.abandon()
                fault = fault ?? RecognitionFault.describe(error, options: options)
            }
        }
        return fault
    }

    func readWhole(_ file: any AudioFile) throws(VoiceboxError) -> [Int16] {
        var samples: [Int16] = []
        let limit = Int(Self.partsMaximumSeconds * Self.sampleRate)
        do {
            while samples.count < limit {
                if control.request == .cancel { throw RecognitionFault.cancelled }
                let chunk = try file.read(maxSamples: 65_536)
                if chunk.isEmpty { break }
                samples += chunk
            }
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
        return samples
    }
}
