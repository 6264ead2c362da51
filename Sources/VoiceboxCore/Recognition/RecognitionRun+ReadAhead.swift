import VoiceboxContract

/// A stream that comes far faster than real time (a recording piped in: `cat talk.raw | voicebox
/// listen --stdin`) is decoded at a file's cost. It is decoded as it comes from its first sample,
/// as any stream is, but each read also takes in what the writer has already sent (the stream
/// is read ahead), and what it has given the decoder is kept. When the writer has closed its end
/// with at least 1.5 parts (90 s with the default `file-part`) not yet decoded, the rest is cut at
/// pauses and decoded in parts on every core from the next utterance end on, as the same audio in
/// a file is: the same words and word times, the partials and a stop as any stream's.
///
/// Only while the writer keeps `fastPace` times ahead of real time (after `fastGrace`), within
/// 20 min of audio (the parts' limit) and `max_seconds`: a live writer's stream is read as it
/// comes and keeps nothing. What streams read ahead and keep is held within one budget for all of
/// them (`RecognitionService.readAheadBudgetBytes`); past it a stream keeps and reads ahead only
/// what is left.
final class FastStream {
    /// How much faster than real time a writer must send for its stream to be kept.
    static let fastPace = 2.0
    static let fastGrace = Duration.milliseconds(500)

    /// Samples given to the decoder so far, from the stream's first; [] once not kept.
    private var taken: [Int16] = []
    private(set) var keeping = true
    private let hold: MemoryBudget.Hold
    private let holdSamples: Int
    private let limit: Int
    private let rest: Int
    private let started = ContinuousClock.now

    /// `limit`: the most audio to keep; `rest`: the least left to decode that is worth parts.
    init(_ stream: any AudioStream, budget: MemoryBudget, limit: Int, rest: Int) {
        self.limit = limit
        self.rest = rest
        hold = budget.hold(upTo: (limit + 1) * MemoryBudget.bytesPerSample)
        holdSamples = hold.bytes / MemoryBudget.bytesPerSample
        taken.reserveCapacity(holdSamples)
        stream.readAheadLimit = holdSamples
        if holdSamples < rest { stopKeeping(stream) }
    }

    /// After each read of the stream: keeps the samples while the writer is fast enough, and
    /// reads ahead only as far as the budget left allows.
    func took(_ samples: [Int16], from stream: any AudioStream) {
        guard keeping else {
            hold.shrink(to: stream.buffered * MemoryBudget.bytesPerSample)
            return
        }
        taken += samples
        let received = taken.count + stream.buffered
        let elapsed = ContinuousClock.now - started
        let slow = elapsed >= Self.fastGrace && Double(received) / RecognitionRun.sampleRate < Self.fastPace * (elapsed / .seconds(1))
        if slow || received > limit {
            stopKeeping(stream)
        } else {
            stream.readAheadLimit = max(0, holdSamples - taken.count)
        }
    }

    /// Whether the rest is to be decoded in parts, at an utterance end: the writer has closed its
    /// end, everything was kept (so within the limit: `took` saw every read) and enough is left.
    func partsWanted(_ stream: any AudioStream) -> Bool {
        keeping && stream.hasEnded && stream.buffered >= rest
    }

    /// The whole stream, what was decoded and then the rest, and how many samples were decoded.
    /// Keeps nothing after.
    func whole(_ stream: any AudioStream) -> (samples: [Int16], decoded: Int) {
        defer { taken = [] }
        return (taken + stream.takeBuffered(), taken.count)
    }

    private func stopKeeping(_ stream: any AudioStream) {
        keeping = false
        taken = []
        stream.readAheadLimit = 0
        hold.shrink(to: stream.buffered * MemoryBudget.bytesPerSample)
    }
}

extension RecognitionRun {
    /// A stream's `FastStream`, when it could be decoded in parts: read as a file (no
    /// `silence_seconds`), more than one core, and a limit that leaves room for parts.
    func fastStream(_ stream: any AudioStream) -> FastStream? {
        guard !options.endsAtSilence, let lanes = control.lanes, lanes.extra > 0 else { return nil }
        var limit = Int(Self.partsMaximumSeconds * Self.sampleRate)
        if let maxSeconds = options.maxSeconds { limit = min(limit, Int(maxSeconds * Self.sampleRate)) }
        let rest = Int(fileParts.minimumFileSeconds * Self.sampleRate)
        guard limit >= rest else { return nil }
        // A regular file says how long it is: one too short or too long for parts keeps nothing.
        if let duration = stream.duration, !(rest...limit).contains(Int(duration * Self.sampleRate)) { return nil }
        return FastStream(stream, budget: dependencies.readAhead, limit: limit, rest: rest)
    }
}
