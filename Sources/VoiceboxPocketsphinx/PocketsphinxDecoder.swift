import CPocketsphinx
import VoiceboxCore

/// One stream of audio through a loaded pocketsphinx decoder (see `SpeechDecoder`, `LoadedModel`).
///
/// With the language model it ends pocketsphinx's utterance whenever the voice-activity detector
/// falls silent (as `pocketsphinx_continuous` does) and joins the pieces in `finish`: that keeps
/// each piece's lattice small and the word times exact. Grammar and keyphrase searches keep one
/// utterance across pauses, since a grammar must see the whole sentence.
///
/// Confidence: each word's is its posterior probability in pocketsphinx's word lattice
/// (`ps_seg_prob`, a log in pocketsphinx's base, made 0...1 with `logmath_exp`; the same figure
/// `pocketsphinx_continuous -time yes` prints), and a result's is the mean of its words'.
/// The lattice posterior of the whole sentence (`ps_get_prob`) is no use as a confidence: 0.04
/// for a perfectly recognized "go forward ten meters". Grammar searches report 1 for every word
/// (their 0.8 lattice has one path), and keyword spotting, which has no lattice, reports 1 for
/// each phrase that passed its threshold.
public final class PocketsphinxDecoder: SpeechDecoder {
    private let sphinx: SphinxDecoder
    private let splitsAtPauses: Bool
    private let spotsKeyphrases: Bool
    private let framesPerSecond: Double
    private let samplesPerFrame: Int
    public let speechEndDelay: Double
    /// Measured, not configured: sphinxbase's noise tracker starts from the first frame and rises
    /// towards the real noise floor slowly (0.995 a frame), so the detector reports speech from
    /// 0.12 s to 0.9-1.4 s into a stream of steady noise at any level (±1 to σ 300 tried).
    public let detectorWarmUp = 1.5

    /// The search this recognition runs, and whether the next utterances skim instead
    /// (`hearNext`): hear the audio through the cheap search, keeping no words.
    private let search: String?
    private var skimming = false
    private var streamStarted = false
    private var streamSamples = 0
    private var utteranceOpen = false
    private var heardSpeech = false
    private var clock = FrameClock()
    /// Finished pocketsphinx utterances of the current recognition.
    private var pieces: [RecognitionResult] = []

    init(sphinx: SphinxDecoder, plan: SearchPlan) {
        self.sphinx = sphinx
        search = sphinx.currentSearch
        splitsAtPauses = plan == .languageModel
        if case .keyphrases = plan { spotsKeyphrases = true } else { spotsKeyphrases = false }
        let (settings, _) = sphinx.call { ps in
            let config = ps_get_config(ps)
            return (frameRate: cmd_ln_int_r(config, "-frate"), sampleRate: cmd_ln_float_r(config, "-samprate"),
                    window: ps_get_feat(ps).map { Int($0.pointee.window_size) } ?? 0,
                    postSpeech: cmd_ln_int_r(config, "-vad_postspeech"))
        }
        framesPerSecond = Double(settings.frameRate)
        // The detector keeps "in speech" for -vad_postspeech frames of silence (50: 0.5 s).
        speechEndDelay = Double(settings.postSpeech) / max(1, framesPerSecond)
        samplesPerFrame = max(1, Int(settings.sampleRate) / max(1, settings.frameRate))
        clock.lag = settings.window
    }

    deinit {
        if utteranceOpen { _ = sphinx.call { ps in ps_end_utt(ps) } }
        sphinx.removeCustomSearch()  // the grammar's memory freed now, not at the next recognition
    }

    public func process(_ samples: [Int16]) throws -> Bool {
        try samples.withUnsafeBufferPointer { try process($0) }
    }

    public func process(_ samples: UnsafeBufferPointer<Int16>) throws -> Bool {
        try openUtterance()
        let (state, errors) = sphinx.call { ps in
            let status = samples.isEmpty ? 0 : ps_process_raw(ps, samples.baseAddress, samples.count, 0, 0)
            return (status: status, inSpeech: ps_get_in_speech(ps) != 0, decoded: Int(ps_get_n_frames(ps)))
        }
        guard state.status >= 0 else {
            throw RecognitionError.engineFailure("pocketsphinx failed to process audio: \(errors.joined(separator: "; "))")
        }
        let inSpeech = state.inSpeech
        streamSamples += samples.count
        clock.record(inSpeech: inSpeech, decodedFrames: state.decoded, streamFrames: streamSamples / samplesPerFrame)
        heardSpeech = heardSpeech || inSpeech
        if splitsAtPauses, heardSpeech, !inSpeech { try closeUtterance() }
        return inSpeech
    }

    public func hearNext(searching: Bool, newStream: Bool) throws {
        if newStream {
            if utteranceOpen { try endUtterance() }
            pieces = []
            streamStarted = false
            streamSamples = 0
        }
        skimming = !searching
    }

    public func partial() -> String? {
        var texts = pieces.map(\.text)
        if utteranceOpen, !skimming, let current = sphinx.call({ ps in ps_get_hyp(ps, nil).map { String(cString: $0) } }).0 {
            texts.append(current)
        }
        let text = texts.filter { !$0.isEmpty }.joined(separator: " ")
        return text.isEmpty ? nil : text
    }

    public func finish() throws -> RecognitionResult {
        if utteranceOpen { try closeUtterance() }
        defer { pieces = [] }
        return RecognitionResult(joining: pieces)
    }

    public func discard() throws {
        if utteranceOpen { try endUtterance() }
        pieces = []
        // The cepstral mean learned from what was dropped would colour what follows; the
        // detector's noise estimate (reset only by a new stream) is kept, which is the point.
        sphinx.forgetEarlierStreams()
    }

    private func openUtterance() throws {
        guard !utteranceOpen else { return }
        try chooseSearch()
        if !streamStarted { sphinx.forgetEarlierStreams() }
        let (status, errors) = sphinx.call { ps -> Int32 in
            // A new stream: times count from its first sample, the noise estimate starts over.
            if !streamStarted { ps_start_stream(ps) }
            return ps_start_utt(ps)
        }
        guard status >= 0 else {
            throw RecognitionError.engineFailure("pocketsphinx cannot start an utterance: \(errors.joined(separator: "; "))")
        }
        streamStarted = true
        utteranceOpen = true
        heardSpeech = false
        clock.startUtterance()
    }

    private func closeUtterance() throws {
        try endUtterance()
        // Without speech there are only fillers; pocketsphinx_continuous prints nothing either.
        if heardSpeech, !skimming { pieces.append(collectResult()) }
    }

    /// The cheap search while skimming, this recognition's otherwise; without a cheap search
    /// (a dictionary without its word) it searches anyway and drops the words.
    private func chooseSearch() throws {
        guard let search else { return }
        let wanted = skimming ? sphinx.skimSearch() ?? search : search
        if sphinx.currentSearch != wanted { try sphinx.select(wanted) }
    }

    private func endUtterance() throws {
        utteranceOpen = false
        let (status, errors) = sphinx.call { ps in ps_end_utt(ps) }
        guard status >= 0 else {
            throw RecognitionError.engineFailure("pocketsphinx cannot end the utterance: \(errors.joined(separator: "; "))")
        }
    }

    /// The text, words and confidences of the utterance just ended (see the type's comment).
    private func collectResult() -> RecognitionResult {
        let (result, _) = sphinx.call { ps -> RecognitionResult in
            guard let hyp = ps_get_hyp(ps, nil), hyp.pointee != 0 else { return .empty }
            _ = ps_get_prob(ps)  // runs the lattice's forward-backward pass the posteriors come from
            var spoken = words(ps)
            if spotsKeyphrases {
                // Spotted phrases come newest first: put them in the order they were said.
                spoken = spoken.sorted { $0.start < $1.start }.map { RecognizedWord(word: $0.word, start: $0.start, end: $0.end) }
                return RecognitionResult(text: spoken.map(\.word).joined(separator: " "), confidence: 1, words: spoken)
            }
            return RecognitionResult(text: String(cString: hyp), confidence: RecognitionResult.meanConfidence(spoken),
                                     words: spoken)
        }
        return result
    }

    private func words(_ ps: OpaquePointer) -> [RecognizedWord] {
        var segments: [(word: String, start: Int32, end: Int32, posterior: Double)] = []
        let logmath = ps_get_logmath(ps)
        var iterator = ps_seg_iter(ps)
        while let segment = iterator {
            var start: Int32 = 0, end: Int32 = 0
            ps_seg_frames(segment, &start, &end)
            let posterior = logmath_exp(logmath, ps_seg_prob(segment, nil, nil, nil))
            segments.append((String(cString: ps_seg_word(segment)), start, end, min(1, max(0, posterior))))
            iterator = ps_seg_next(segment)  // frees the iterator after the last segment
        }
        // Grammar and n-gram searches begin with a segment at decoded frame 0 (<s> or silence):
        // its reported start is pocketsphinx's stream offset.
        let offset = spotsKeyphrases ? nil : segments.first.map { Int($0.start) }
        return segments.compactMap { segment in
            guard let word = WordFilter.spoken(segment.word) else { return nil }
            let start = clock.streamFrame(reported: Int(segment.start), offset: offset)
            let end = clock.streamFrame(reported: Int(segment.end), offset: offset)
            return RecognizedWord(word: word, start: Double(start) / framesPerSecond,
                                  end: Double(end + 1) / framesPerSecond, confidence: segment.posterior)
        }
    }
}
