/// A file through a decoder: all of it (or `maxSeconds` of it), cut into utterances at every
/// pause the voice-activity detector hears, as pocketsphinx_continuous cuts it. The one loop
/// for files: the service's file recognitions run it, and the engine's tests too.
///
/// It runs on its caller's executor (`nonisolated(nonsending)`), and so do the closures it is
/// given: a recognition's actor reads, and is suspended while its decoder worker decodes. A
/// file's `read` may block (a file worker's pipe, a caller's stream, polled): the service runs
/// this on a recognition's own queue, never on Swift's shared pool.
public enum FileReading {
    /// Samples per read: pocketsphinx_continuous's chunk, so that a file is cut into utterances
    /// where the bare tool cuts it and gives the same words.
    public static let chunk = 2048
    /// Speech without a pause is cut into utterances of at most this, to bound the decoder's
    /// work per utterance.
    public static let maxSegmentSeconds = 30.0
    static let sampleRate = 16_000.0
    /// Audio before an utterance's speech that a replay of it begins with: the detector's
    /// warm-up (it learns the background noise there) and its delay in hearing speech.
    static let preRoll = 24_000

    public struct Outcome: Sendable, Equatable {
        /// One result per utterance that said something, in order; word times count from the
        /// start of the file.
        public var segments: [RecognitionResult]
        /// Seconds of audio read.
        public var seconds: Double
        /// `.endOfFile`, `.maxDuration` or `.stopped`.
        public var end: RecognitionEnd
        /// Whether it ended early because `yieldAtPause` or `yieldInSpeech` asked (`end` is
        /// `.endOfFile` then, but there is more to read).
        public var yielded = false
        /// Cut inside an utterance no longer than `replaySeconds`: its audio, for the next
        /// decoder to hear first, and what this decoder heard of it (to keep if no next decoder
        /// comes). Neither is in `segments`, and `seconds` ends where the audio begins.
        public var unfinished: Unfinished?

        /// The segments as one result.
        public var result: RecognitionResult { RecognitionResult(joining: segments) }
    }

    /// An utterance cut where it should not have been, to be heard again whole.
    public struct Unfinished: Sendable, Equatable {
        public var audio: [Int16]
        /// The words heard up to the cut, times as the segments' (from the reading's start).
        public var heard: RecognitionResult
        public var seconds: Double { Double(audio.count) / sampleRate }
    }

    /// - Parameters:
    ///   - maxSeconds: read no more than this; nil for the whole file.
    ///   - shouldStop: asked before every chunk: true ends the reading with what was heard
    ///     (`.stopped`); throw to abandon it.
    ///   - afterChunk: after every chunk, with the seconds read so far and the utterances
    ///     finished so far.
    ///   - yieldAtPause: asked after every chunk where no speech has been heard since the last
    ///     utterance ended (a place where the reading can stop without cutting one): true ends it
    ///     there (`yielded`).
    ///   - endAfter: read on past this many samples only to the end of the utterance going on
    ///     there (or of the next one, when it is a pause): stop at the first utterance end at or
    ///     after it, or at the file's end; and ask `yieldAtPause` only right after an utterance
    ///     ends. So every reading starts and ends where one pass over the file is between two
    ///     utterances (long files' parts).
    ///   - yieldInSpeech: asked after every chunk inside an utterance: true ends the reading
    ///     there (`yielded`). An utterance up to `replaySeconds` long, counted from `preRoll`
    ///     (1.5 s) before its speech, is given back whole (`unfinished`), to be heard again from
    ///     there, so no word is cut; a longer one ends at the cut, where words may differ from an
    ///     unbroken read.
    ///   - yieldAtUtteranceEnd: asked right after each utterance ends, where one pass over the
    ///     file is between two: true ends the reading there (`yielded`; a stream's rest goes on
    ///     in parts, `FastStream`).
    /// - Throws: what the file, the decoder or `shouldStop` throws.
    nonisolated(nonsending)
    public static func read(_ file: any AudioFile, through decoder: any SpeechDecoder, maxSeconds: Double? = nil,
                            maxSegmentSeconds: Double = maxSegmentSeconds, endAfter boundary: Int? = nil,
                            shouldStop: () throws -> Bool = { false },
                            afterChunk: nonisolated(nonsending) (_ seconds: Double, _ segments: [RecognitionResult]) async -> Void
                                = { _, _ in },
                            yieldAtPause: () -> Bool = { false },
                            yieldInSpeech: () -> Bool = { false },
                            replaySeconds: Double = 0,
                            yieldAtUtteranceEnd: () -> Bool = { false })
        async throws -> Outcome {
        let limit = maxSeconds.map { Int(($0 * sampleRate).rounded()) }
        var segmenter = Endpointer(silenceSeconds: 0, maxSeconds: maxSegmentSeconds)
        var segments: [RecognitionResult] = []
        func keep(_ result: RecognitionResult) {
            if !result.text.isEmpty { segments.append(result) }
        }
        var taken = 0
        var end = RecognitionEnd.endOfFile
        var yielded = false
        // The audio of the utterance going on, while it is short enough to be heard again: from
        // `preRoll` before its speech (what came before is no part of it), to `replayLimit`.
        let replayLimit = Int(replaySeconds * sampleRate)
        var utterance: [Int16] = []
        var replayable = replayLimit > 0
        reading: while true {
            if try shouldStop() {
                end = .stopped
                break reading
            }
            var wanted = chunk
            if let limit {
                wanted = min(wanted, limit - taken)
                guard wanted > 0 else {
                    end = .maxDuration
                    break reading
                }
            }
            var samples = try file.read(maxSamples: wanted)
            if samples.isEmpty { break reading }
            if let limit, taken + samples.count > limit { samples.removeLast(taken + samples.count - limit) }
            taken += samples.count
            if replayable { utterance += samples }
            let inSpeech = try await decoder.process(samples)
            var ended = false
            if segmenter.feed(inSpeech: inSpeech, seconds: Double(samples.count) / sampleRate) != .continue {
                keep(try await decoder.finish())
                segmenter.reset()
                utterance.removeAll(keepingCapacity: true)
                replayable = replayLimit > 0
                ended = true
            } else if replayable {
                if !segmenter.heardSpeech, utterance.count > preRoll {
                    utterance.removeFirst(utterance.count - preRoll)
                } else if utterance.count > replayLimit {
                    replayable = false
                    utterance = []
                }
            }
            await afterChunk(Double(taken) / sampleRate, segments)
            if let boundary, ended, taken >= boundary { break reading }
            if ended, yieldAtUtteranceEnd() {
                yielded = true
                break reading
            }
            if segmenter.heardSpeech ? yieldInSpeech() : (boundary == nil || ended) && yieldAtPause() {
                yielded = true
                if segmenter.heardSpeech, replayable {
                    let start = Double(taken - utterance.count) / sampleRate
                    let heard = try await decoder.finish()
                    // A copy of its own size: the buffer grew by doubling.
                    return Outcome(segments: segments, seconds: start, end: end, yielded: true,
                                   unfinished: Unfinished(audio: Array(utterance[...]), heard: heard))
                }
                break reading
            }
        }
        keep(try await decoder.finish())
        return Outcome(segments: segments, seconds: Double(taken) / sampleRate, end: end, yielded: yielded)
    }
}
