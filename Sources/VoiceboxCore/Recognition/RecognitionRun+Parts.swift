import VoiceboxLock

/// A long file on every core: cut at pauses into parts of at most about a minute, as many for
/// each core (`FileParts`), which
/// this recognition and up to a core's worth of helpers decode at once, each helper on a turn of
/// its own in the fair queue (`FileLanes`). A helper gives its turn back at its next pause when
/// another recognition waits, and the rest of its part goes back to the list. The parts'
/// utterances are joined in order, their word times shifted to the file's. Each part's decoder
/// starts afresh at the cut, so a few words may differ from one pass.
extension RecognitionRun {
    /// Files this long or longer are cut into parts; up to `partsMaximumSeconds` (the samples are
    /// held in memory, 32 kB a second: 38 MB at most).
    static let partsMinimumSeconds = 90.0
    static let partsMaximumSeconds = 1200.0

    /// Whether `file` is read in parts: long enough, short enough to hold, read whole, and more
    /// than one core to read it on.
    func readsInParts(_ file: any AudioFile) -> Bool {
        guard let lanes = control.lanes, lanes.extra > 0, let duration = file.duration,
              duration >= Self.partsMinimumSeconds, duration <= Self.partsMaximumSeconds else { return false }
        return options.maxSeconds.map { $0 >= duration } ?? true
    }

    func readInParts(_ file: any AudioFile, through decoder: any SpeechDecoder) async throws(VoiceboxError) -> Recognition {
        guard let lanes = control.lanes else { preconditionFailure("readsInParts checked the lanes") }
        let samples = try readWhole(file)
        let ranges = FileParts.ranges(of: samples, count: FileParts.partCount(seconds: Double(samples.count) / Self.sampleRate,
                                                                             lanes: lanes.extra + 1))
        let work = PartsWork(ranges)
        let total = Double(samples.count) / Self.sampleRate
        let control = control
        let configuration = options.configuration(language: language)
        let engine = parts.engine
        let options = options
        let helpers = (0..<min(lanes.extra, ranges.count - 1)).map { _ in
            Task { () async throws -> Void in
                var lane: PartLane?
                while work.remaining, let turn = await lanes.take() {
                    // The turn goes back however the part ends (no async defer).
                    var failure: (any Error)?
                    let part = work.next()
                    if let part {
                        do {
                            if lane == nil {
                                let decoder = try await engine.makeDecoder(configuration)
                                control.attachDecoder(decoder)
                                lane = PartLane(decoder: decoder)
                            }
                            try await lane!.decode(part, of: samples, control: control, work: work, yieldAtPause: lanes.othersWait)
                        } catch { failure = error }
                    }
                    await lanes.giveBack(turn)
                    if let failure { throw failure }
                    if part == nil { break }
                }
            }
        }
        var fault: VoiceboxError?
        do throws(VoiceboxError) {
            var progress = RateLimiter(perSecond: 10)
            let ownLane = PartDecoder(decoder)
            while let part = work.next() {
                let start = Double(part.lowerBound) / Self.sampleRate
                do {
                    try work.decode(part, of: samples, through: ownLane, control: control, afterChunk: { segments in
                        if total > 0, progress.allow(at: .now) {
                            parts.bus.emit(ServiceSignals.recognitionProgress, id, min(1, work.secondsDecoded / total))
                        }
                        // Partials once everything before this part is decoded: the text so far, in order.
                        if let earlier = work.heard(before: part.lowerBound) {
                            reportPartial(decoder, after: earlier + segments.map { $0.shifted(by: start) })
                        }
                    })
                } catch {
                    throw RecognitionFault.describe(error, options: options)
                }
            }
        } catch {
            fault = error
            work.abandon()
        }
        await lanes.close()  // no helper waits for a turn it no longer needs
        for helper in helpers {
            do { try await helper.value } catch {
                work.abandon()
                fault = fault ?? RecognitionFault.describe(error, options: options)
            }
        }
        if let fault { throw fault }
        if control.request == .cancel { throw RecognitionFault.cancelled }
        let heard = work.heard()
        parts.bus.emit(ServiceSignals.recognitionProgress, id, heard.complete ? 1 : min(1, heard.seconds / max(total, 1e-9)))
        return Recognition(id: id, result: RecognitionResult(joining: heard.segments), duration: heard.seconds,
                           end: heard.complete ? .endOfFile : .stopped, language: language)
    }

    private func readWhole(_ file: any AudioFile) throws(VoiceboxError) -> [Int16] {
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

/// One more core for a long file's parts: a decoder of its own, on a dispatch queue of its own.
private actor PartLane {
    private let executor = QueueExecutor(label: "voicebox.recognition.part")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private let decoder: PartDecoder

    init(decoder: sending any SpeechDecoder) {
        self.decoder = PartDecoder(decoder)
    }

    func decode(_ part: Range<Int>, of samples: [Int16], control: RecognitionControl, work: PartsWork,
                yieldAtPause: @Sendable () -> Bool) throws {
        try work.decode(part, of: samples, through: decoder, control: control, yieldAtPause: yieldAtPause)
    }
}

/// A lane's decoder and where its stream stands. The decoder's word times count from the first
/// sample it heard, and a lane takes parts that need not follow one another: its later parts'
/// times are its own, not the file's, until they are shifted.
private final class PartDecoder {
    let decoder: any SpeechDecoder
    /// Samples heard since the decoder's stream began.
    var heard = 0

    init(_ decoder: any SpeechDecoder) {
        self.decoder = decoder
    }
}

/// The parts of one long file: those left to decode, those decoded, how much audio all lanes
/// have decoded. Shared by the lanes, each on its own queue: a lock guards it.
private final class PartsWork: Sendable {
    private struct State {
        /// Parts not taken yet, in order; a part given back at a pause puts its rest first.
        var pending: [Range<Int>]
        /// Decoded parts (or their beginnings, up to a pause), by first sample.
        var decoded: [Int: (read: Int, outcome: FileReading.Outcome)] = [:]
        var secondsDecoded = 0.0
        var abandoned = false
    }
    private let state: Locked<State>
    /// Samples in the whole file.
    private let total: Int

    init(_ ranges: [Range<Int>]) {
        state = Locked(State(pending: ranges))
        total = ranges.last?.upperBound ?? 0
    }

    var remaining: Bool { state.withLock { !$0.pending.isEmpty && !$0.abandoned } }

    /// The first part left, nil when none is.
    func next() -> Range<Int>? {
        state.withLock { state in
            guard !state.pending.isEmpty, !state.abandoned else { return nil }
            return state.pending.removeFirst()
        }
    }

    /// Decodes `part` through `lane`'s decoder (on the calling lane's queue), counting the audio
    /// it decodes and stopping with every lane; records what it heard, word times from the part's
    /// start. `afterChunk` gets the part's utterances finished so far.
    func decode(_ part: Range<Int>, of samples: [Int16], through lane: PartDecoder, control: RecognitionControl,
                yieldAtPause: () -> Bool = { false }, afterChunk: ([RecognitionResult]) -> Void = { _ in }) throws {
        let origin = Double(lane.heard) / FileReading.sampleRate
        var read = 0.0
        var outcome = try FileReading.read(SampleSlice(samples, part), through: lane.decoder, shouldStop: { try shouldStop(control) },
                                           afterChunk: { seconds, segments in
            add(seconds: seconds - read)
            read = seconds
            afterChunk(segments.map { $0.shifted(by: -origin) })
        }, yieldAtPause: yieldAtPause)
        outcome.segments = outcome.segments.map { $0.shifted(by: -origin) }
        let heard = Int((outcome.seconds * FileReading.sampleRate).rounded())
        lane.heard += heard
        finish(part, outcome)
    }

    /// A part decoded, or decoded up to a pause where it gave its turn back: its rest is the next
    /// part to decode.
    private func finish(_ part: Range<Int>, _ outcome: FileReading.Outcome) {
        let read = Int((outcome.seconds * FileReading.sampleRate).rounded())
        state.withLock { state in
            state.decoded[part.lowerBound] = (read, outcome)
            if outcome.yielded, part.lowerBound + read < part.upperBound {
                state.pending.insert(part.lowerBound + read..<part.upperBound, at: 0)
            }
        }
    }

    private func add(seconds: Double) { state.withLock { $0.secondsDecoded += seconds } }
    func abandon() { state.withLock { $0.abandoned = true } }
    var secondsDecoded: Double { state.withLock { $0.secondsDecoded } }

    /// Every lane stops at its next chunk on a stop (keeping what it heard), a cancel (throwing)
    /// or when another lane failed.
    func shouldStop(_ control: RecognitionControl) throws -> Bool {
        switch control.request {
        case .cancel: throw RecognitionFault.cancelled
        case .stop, .interrupt: return true
        case nil: return state.withLock { $0.abandoned }
        }
    }

    /// What was heard before sample `end`, word times from the file's start; nil while some of
    /// it is not decoded yet.
    func heard(before end: Int) -> [RecognitionResult]? {
        let heard = heard(upTo: end)
        return heard.reached >= end ? heard.segments : nil
    }

    /// What was heard from the start of the file on: the parts decoded in order, up to the first
    /// gap (after a stop), with their word times shifted to the file's.
    func heard() -> (segments: [RecognitionResult], seconds: Double, complete: Bool) {
        let heard = heard(upTo: .max)
        let complete = heard.reached >= total && !heard.stopped
        return (heard.segments, Double(heard.reached) / FileReading.sampleRate, complete)
    }

    private func heard(upTo end: Int) -> (segments: [RecognitionResult], reached: Int, stopped: Bool) {
        state.withLock { state in
            var segments: [RecognitionResult] = []
            var reached = 0
            while reached < end, let (read, outcome) = state.decoded[reached] {
                segments += outcome.segments.map { $0.shifted(by: Double(reached) / FileReading.sampleRate) }
                if outcome.end == .stopped { return (segments, reached + read, true) }
                guard read > 0 else { break }
                reached += read
            }
            return (segments, reached, false)
        }
    }
}

/// Part of samples held in memory, read as a file.
private final class SampleSlice: AudioFile {
    private let samples: [Int16]
    private var position: Int
    private let end: Int

    init(_ samples: [Int16], _ range: Range<Int>) {
        self.samples = samples
        position = range.lowerBound
        end = range.upperBound
    }

    var duration: Double? { Double(end - position) / FileReading.sampleRate }

    func read(maxSamples: Int) throws -> [Int16] {
        let count = min(maxSamples, end - position)
        defer { position += count }
        return Array(samples[position..<position + count])
    }
}
