import VoiceboxContract

/// A stream that comes far faster than real time (a recording piped in: `voicebox listen --stdin
/// < talk.raw`) is decoded at a file's cost. Before its decoder starts, it is read ahead while its
/// writer keeps `readAheadPace` times ahead of real time and never leaves it waiting longer than
/// `readAheadPatience`; one that ends so, long enough to be cut into parts (90 s with the default
/// `file-part`, at most 20 min, within `max_seconds`), is decoded in parts on every core, as the
/// same audio in a file is: the same words. Anything else (a live writer, one that pauses, a
/// longer stream, `silence_seconds`, one core) is read as a stream, what was read ahead first: a
/// live stream's first words wait at most about `readAheadPatience` more, or a third of a second
/// behind a full pipe.
///
/// What streams read ahead is held in memory, within one budget for all of them
/// (`RecognitionService.readAheadBudgetBytes`); past it a stream reads ahead only what is left.
extension RecognitionRun {
    /// How much faster than real time a writer must keep sending to be read ahead.
    static let readAheadPace = 8.0
    /// The longest wait for the writer while reading ahead.
    static let readAheadPatience = Duration.milliseconds(100)

    /// The whole stream, when it came fast, ended and is to be decoded in parts; nil when it is
    /// read as a stream (from what it read ahead on).
    func readAhead(_ stream: any AudioStream) throws(VoiceboxError) -> [Int16]? {
        guard !options.endsAtSilence, let lanes = control.lanes, lanes.extra > 0 else { return nil }
        var limit = Int(Self.partsMaximumSeconds * Self.sampleRate)
        if let maxSeconds = options.maxSeconds { limit = min(limit, Int(maxSeconds * Self.sampleRate)) }
        let shortest = Int(fileParts.minimumFileSeconds * Self.sampleRate)
        guard limit >= shortest else { return nil }
        // One sample past the limit tells a stream that is too long from one that is not.
        let hold = dependencies.readAhead.hold(upTo: (limit + 1) * MemoryBudget.bytesPerSample)
        readAheadHold = hold
        let ahead: ReadAhead
        do {
            ahead = try stream.readAhead(upTo: hold.bytes / MemoryBudget.bytesPerSample, pace: Self.readAheadPace,
                                         patience: Self.readAheadPatience)
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
        hold.shrink(to: ahead.samples * MemoryBudget.bytesPerSample)
        guard ahead.complete, control.request == nil, (shortest...limit).contains(ahead.samples) else { return nil }
        do {
            return try stream.read(maxSamples: ahead.samples)
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
    }
}
