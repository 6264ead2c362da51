import VoiceboxThreads

/// One more core for a long file's parts: a decoder of its own (its worker decodes; this actor
/// only awaits it, holding no thread).
actor PartLane {
    private let decoder: PartDecoder

    init(decoder: sending any SpeechDecoder) {
        self.decoder = PartDecoder(decoder)
    }

    func decode(_ part: FilePart, of samples: [Int16], control: RecognitionControl, work: PartsWork,
                yieldAtPause: @Sendable () -> Bool, afterChunk: @Sendable () -> Void) async throws {
        try await work.decode(part, of: samples, through: decoder, control: control, yieldAtPause: yieldAtPause,
                        afterChunk: { _, _ in afterChunk() })
    }
}

/// A lane's decoder and where it stands in the file. It has heard the file from its first
/// sample in order, every reading beginning and ending where one pass is between utterances, so
/// it stands where one pass would stand there (its cepstral mean, its detector) and its clock is
/// the file's: its parts give one pass's words, at the file's times.
final class PartDecoder {
    let decoder: any SpeechDecoder
    /// The samples heard: `0..<position`.
    var position: Int
    private var searching = true

    /// `position`: where it stands, having heard the file up to there, searching.
    init(_ decoder: any SpeechDecoder, position: Int = 0) {
        self.decoder = decoder
        self.position = position
    }

    /// Skims (`SpeechDecoder.hearNext`) from the next utterance on, or searches again.
    nonisolated(nonsending) func search(_ on: Bool) async throws {
        guard on != searching else { return }
        try await decoder.hearNext(searching: on, newStream: false)
        searching = on
    }

    /// Back to the file's start, as a fresh decoder, skimming.
    nonisolated(nonsending) func startOver() async throws {
        try await decoder.hearNext(searching: false, newStream: true)
        searching = false
        position = 0
    }
}

/// A part of a long file: samples `range`, the rest of it read on to where one pass is between
/// utterances. The parts the file is cut into start at a cut, where one pass may be inside an
/// utterance; the rest of a part given back at a pause starts between two.
struct FilePart: Sendable {
    var range: Range<Int>
    var startsBetweenUtterances: Bool
}

/// The parts of one long file: those left to decode, those decoded, how much audio all lanes
/// have decoded. Shared by the lanes, each on its own queue: a lock guards it.
final class PartsWork: Sendable {
    private struct Reading {
        var start: Int
        var read: Int
        var outcome: FileReading.Outcome
    }
    private struct State {
        /// Parts not taken yet, in order; a part given back at a pause puts its rest first.
        var pending: [FilePart]
        /// What was read, in parts (or their beginnings, up to a pause), word times the file's.
        var readings: [Reading] = []
        /// Where one pass is first between utterances at or after a cut, once a lane has found it.
        var afterCut: [Int: Int] = [:]
        var secondsDecoded = 0.0
        var abandoned = false
    }
    private let state: Locked<State>
    /// Samples in the whole file.
    private let total: Int

    /// `ranges` cover the file from the start, or from where `heard` (one pass's reading up to
    /// an utterance end) leaves off.
    init(_ ranges: [Range<Int>], heard: (samples: Int, segments: [RecognitionResult])? = nil) {
        let from = heard?.samples ?? 0
        var state = State(pending: ranges.map { FilePart(range: $0, startsBetweenUtterances: $0.lowerBound == from) })
        if let heard, heard.samples > 0 {
            let outcome = FileReading.Outcome(segments: heard.segments, seconds: Double(heard.samples) / FileReading.sampleRate,
                                              end: .endOfFile)
            state.readings = [Reading(start: 0, read: heard.samples, outcome: outcome)]
        }
        self.state = Locked(state)
        total = ranges.last?.upperBound ?? from
    }

    var remaining: Bool { state.withLock { !$0.pending.isEmpty && !$0.abandoned } }

    /// The first part left, nil when none is.
    func next() -> FilePart? {
        state.withLock { state in
            guard !state.pending.isEmpty, !state.abandoned else { return nil }
            return state.pending.removeFirst()
        }
    }

    /// Decodes `part` through `lane`'s decoder (on the calling lane's executor), counting the audio
    /// it decodes and stopping with every lane; records what it heard. First the lane hears its
    /// way to where the part's decoding begins, without searching (from the file's start if it
    /// stands past it): the part's start, or for a cut the first place after it where one pass is
    /// between utterances. `afterChunk` gets the sample the decoding began at and the utterances
    /// finished since.
    /// True when it gave the rest of the part back at a pause (`yieldAtPause`).
    @discardableResult
    nonisolated(nonsending)
    func decode(_ part: FilePart, of samples: [Int16], through lane: PartDecoder, control: RecognitionControl,
                yieldAtPause: () -> Bool = { false },
                afterChunk: nonisolated(nonsending) (Int, [RecognitionResult]) async -> Void = { _, _ in }) async throws -> Bool {
        let cut = part.range.lowerBound
        let known = state.withLock { $0.afterCut[cut] }
        let ready = part.startsBetweenUtterances ? lane.position == cut : known.map { lane.position == $0 } ?? false
        if !ready {
            if lane.position > cut { try await lane.startOver() }
            try await lane.search(false)
            let skimmed = try await FileReading.read(SampleSlice(samples, lane.position..<samples.count), through: lane.decoder,
                                               endAfter: cut - lane.position, shouldStop: { try shouldStop(control) })
            lane.position += Int((skimmed.seconds * FileReading.sampleRate).rounded())
            if skimmed.end == .stopped {
                record(Reading(start: cut, read: 0, outcome: .init(segments: [], seconds: 0, end: .stopped)))
                return false
            }
            if !part.startsBetweenUtterances { state.withLock { $0.afterCut[cut] = $0.afterCut[cut] ?? lane.position } }
        }
        try await lane.search(true)
        let start = lane.position
        var read = 0.0
        let outcome = try await FileReading.read(SampleSlice(samples, start..<samples.count), through: lane.decoder,
                                           endAfter: part.range.upperBound - start, shouldStop: { try shouldStop(control) },
                                           afterChunk: { seconds, segments in
            add(seconds: seconds - read)
            read = seconds
            await afterChunk(start, segments)
        }, yieldAtPause: yieldAtPause)
        let heard = Int((outcome.seconds * FileReading.sampleRate).rounded())
        lane.position += heard
        let gaveBack = state.withLock { state in
            if outcome.yielded, start + heard < part.range.upperBound {
                state.pending.insert(FilePart(range: start + heard..<part.range.upperBound, startsBetweenUtterances: true), at: 0)
                return true
            } else if outcome.end == .endOfFile, part.range.upperBound < total {
                state.afterCut[part.range.upperBound] = state.afterCut[part.range.upperBound] ?? start + heard
            }
            return false
        }
        record(Reading(start: start, read: heard, outcome: outcome))
        return gaveBack
    }

    private func record(_ reading: Reading) {
        state.withLock { $0.readings.append(reading) }
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

    /// What was heard before sample `end`; nil while some of it is not decoded yet.
    func heard(before end: Int) -> [RecognitionResult]? {
        let heard = joined(upTo: end, bridging: false)
        return heard.reached >= end ? heard.segments : nil
    }

    /// What was heard from the start of the file on, up to the first part not decoded yet.
    func heardSoFar() -> [RecognitionResult] {
        joined(upTo: .max, bridging: false).segments
    }

    /// What was heard from the start of the file on, once every lane is done: the readings in
    /// order, up to the first that stopped.
    func heard() -> (segments: [RecognitionResult], seconds: Double, complete: Bool) {
        let heard = joined(upTo: .max, bridging: true)
        let complete = heard.reached >= total && !heard.stopped
        return (heard.segments, Double(heard.reached) / FileReading.sampleRate, complete)
    }

    /// The readings joined in order from the file's start. Each begins where the one before
    /// ended, as both lanes found the same place between utterances; should two ever disagree
    /// (`bridging`), an overlap keeps the earlier reading's words and a gap is stepped over.
    private func joined(upTo end: Int, bridging: Bool) -> (segments: [RecognitionResult], reached: Int, stopped: Bool) {
        state.withLock { state in
            var segments: [RecognitionResult] = []
            var reached = 0
            for reading in state.readings.sorted(by: { ($0.start, $0.read) < ($1.start, $1.read) }) {
                guard reached < end else { break }
                guard reading.start == reached || bridging && reading.start + reading.read > reached else {
                    if reading.start < reached { continue }
                    break
                }
                if reading.start < reached {
                    // Two lanes disagreed: the utterances that begin before this reading's overlap ends
                    // were the reading before's.
                    let from = Double(reached) / FileReading.sampleRate
                    segments += reading.outcome.segments.filter { ($0.words.first?.start ?? from) >= from }
                } else {
                    // All of them, also an utterance whose first word the detector's lead (0.2 s)
                    // places just before the reading's start.
                    segments += reading.outcome.segments
                }
                if reading.outcome.end == .stopped { return (segments, max(reached, reading.start + reading.read), true) }
                reached = max(reached, reading.start + reading.read)
            }
            return (segments, reached, false)
        }
    }
}

/// Part of samples held in memory, read as a file.
final class SampleSlice: AudioFile {
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
