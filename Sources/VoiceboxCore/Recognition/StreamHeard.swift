/// What a stream recognition has heard over its rounds (one per decoder it held).
struct StreamHeard {
    /// The endpointer, meter and warm-up when the stream ends at the end of speech; nil when it
    /// is read as a file.
    var live: LiveAudio?
    /// How long it holds a decoder before it gives it to another caller's stream.
    let holds: StreamHolds
    /// Utterances finished, word times from the stream's start.
    var segments: [RecognitionResult] = []
    /// Seconds of audio read, where the current decoder's audio began, and how long its
    /// current utterance is (listening: cut at `FileReading.maxSegmentSeconds`).
    var seconds = 0.0
    var roundStart = 0.0
    var utteranceSeconds = 0.0
    /// Set once the recognition has decided how it ends (end of speech, `max_seconds`).
    var end: RecognitionEnd?
    /// The last round ended at a pause to give its decoder to another caller's stream.
    var yielded = false
    /// What a stream that may come fast keeps for parts (`FastStream`); whether the decoder has
    /// heard it all from its first sample (no fresh one took over), as a part's must; and whether
    /// the last round ended at an utterance end for the rest to be decoded in parts.
    var fast: FastStream?
    var decoderHeardAll = true
    var toParts = false
    /// Read as a file: the utterance the last round was cut inside, for the next to hear first,
    /// and what the last heard of it (word times from the stream's start), kept if none comes.
    var unfinished: Unfinished?
    struct Unfinished {
        /// Its audio and what was heard of it (word times from the stream's start).
        var utterance: FileReading.Unfinished
        /// Its share of `MemoryBudget`, given back once it is heard again or the stream ends.
        var hold: MemoryBudget.Hold
    }
    /// Every utterance heard, the one cut last included until it is heard again.
    var result: RecognitionResult { RecognitionResult(joining: segments + [unfinished?.utterance.heard ?? .empty]) }
    /// Seconds of audio read, the cut utterance's included.
    var secondsRead: Double { seconds + (unfinished?.utterance.seconds ?? 0) }
    /// Listening: the last `recentSamples` samples read, for a fresh decoder to hear first.
    var recent: [Int16] = []
    /// 1.5 s of pocketsphinx's warm-up, and after it `onsetSamples`.
    static let recentSamples = 24_000 + onsetSamples
    /// 0.3 s: pocketsphinx's detector calls speech only 0.1 s after it begins and keeps the 0.2 s
    /// before, so a word that began this close to a cut in a pause was not yet speech to the last
    /// decoder. Forgotten with the warm-up, it was lost ("go forward" heard as "forward").
    static let onsetSamples = 4_800

    /// What a fresh decoder hears before the stream's next samples: `recent` as warm-up, forgotten
    /// (so that neither its detector's warm-up nor its false start touches the speech to come) but,
    /// taking over in a pause after speech, the last `onsetSamples`, heard as the next utterance's
    /// beginning. (Inside speech they stay forgotten: the last decoder has heard them in its words.)
    nonisolated(nonsending)
    static func hearFirst(_ recent: [Int16], into decoder: any SpeechDecoder, inPauseAfterSpeech: Bool) async throws {
        let onset = inPauseAfterSpeech ? min(onsetSamples, recent.count) : 0
        _ = try await decoder.process(Array(recent.dropLast(onset)))
        try await decoder.discard()
        if onset > 0 { _ = try await decoder.process(Array(recent.suffix(onset))) }
    }

    mutating func keepRecent(_ chunk: [Int16]) {
        recent += chunk
        if recent.count > Self.recentSamples { recent.removeFirst(recent.count - Self.recentSamples) }
    }
    /// When the stream took the decoder it holds.
    var decoderTaken = ContinuousClock.now

    /// Whether to give the decoder to another caller's stream that waits for one (at a pause):
    /// not before a turn's worth of holding it, so that two streams do not hand one decoder
    /// back and forth at every chunk.
    func shouldYield(_ control: RecognitionControl) -> Bool {
        control.decoderWanted && ContinuousClock.now - decoderTaken >= holds.atPause
    }

    /// Whether to give it even inside speech (or noise): asked so for `holds.cutAfter` with no
    /// pause, and held for `holds.inSpeech`, so that under contention the decoders go round every
    /// few seconds rather than every 30 s of unbroken speech.
    func mustCut(_ control: RecognitionControl) -> Bool {
        guard let since = control.cutWantedSince else { return false }
        let now = ContinuousClock.now
        return now - since >= holds.cutAfter && now - decoderTaken >= holds.inSpeech
    }
}

/// How long a stream keeps a decoder it took before it yields it to another caller's stream at a
/// pause (`stream-hold`); and before it cuts an utterance for it (`stream-hold-in-speech`), when
/// no pause came within `stream-cut` of being asked.
struct StreamHolds: Sendable {
    var atPause: Duration
    var inSpeech: Duration
    var cutAfter: Duration

    init(_ bounds: Bounds) {
        atPause = bounds[.streamHold]
        inSpeech = bounds[.streamHoldInSpeech]
        cutAfter = bounds[.streamCut]
    }
}

/// Audio heard again first (an utterance cut for another stream), then the stream's. The cut
/// utterance, its budget included, is let go as soon as it has been read.
final class ReplayedAudio: AudioFile {
    private var cut: StreamHeard.Unfinished?
    private var next = 0
    private let rest: any AudioFile
    /// When the last replayed sample was read; nil before (or with nothing to replay).
    private(set) var replayEnded: ContinuousClock.Instant?

    init(_ cut: StreamHeard.Unfinished?, then rest: any AudioFile) {
        self.cut = cut.flatMap { $0.utterance.audio.isEmpty ? nil : $0 }
        self.rest = rest
    }

    var replaying: Bool { cut != nil }
    var duration: Double? { nil }

    /// The cut utterance, while it has not all been read (the reading stopped inside it).
    func takeBack() -> StreamHeard.Unfinished? {
        defer { cut = nil }
        return cut
    }

    func read(maxSamples: Int) throws -> [Int16] {
        guard let audio = cut?.utterance.audio else { return try rest.read(maxSamples: maxSamples) }
        let end = min(audio.count, next + maxSamples)
        let samples = Array(audio[next..<end])
        next = end
        if next == audio.count {
            replayEnded = .now
            cut = nil
        }
        return samples
    }
}

/// A stream whose samples also go to a meter as they are read.
final class MeteredAudio: AudioFile {
    private let stream: any AudioStream
    private let observe: ([Int16]) -> Void

    init(_ stream: any AudioStream, observe: @escaping ([Int16]) -> Void) {
        self.stream = stream
        self.observe = observe
    }

    var duration: Double? { nil }

    func read(maxSamples: Int) throws -> [Int16] {
        let samples = try stream.read(maxSamples: maxSamples)
        observe(samples)
        return samples
    }
}
