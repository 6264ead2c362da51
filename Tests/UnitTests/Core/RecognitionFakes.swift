@testable import TestSupport
import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads

/// Scripted parts for RecognitionService: loud samples (|x| > 1000) are "speech", each chunk of
/// speech is one word, "w1 w2 ...".
final class FakeEngine: RecognitionEngine {
    let languages: [String]
    let warmUp: Double
    /// Decoders made so far.
    let made = Locked(0)
    /// Held until opened, as a model that loads slowly; its failure, if any, fails the load.
    let loading: LoadGate?
    init(languages: [String] = ["de-DE", "en-US"], warmUp: Double = 0, loading: LoadGate? = nil) {
        self.languages = languages
        self.warmUp = warmUp
        self.loading = loading
    }

    func makeDecoder(_ configuration: RecognitionConfiguration) async throws -> sending any SpeechDecoder {
        if let failure = await loading?.passed() { throw failure }
        if let grammar = configuration.grammar, grammar.contains("broken") {
            throw RecognitionError.invalidGrammar("syntax error at 'broken'")
        }
        made.withLock { $0 += 1 }
        return FakeDecoder(warmUp: warmUp)
    }
}

/// A model load the test lets finish (`open`), or fail.
final class LoadGate: Sendable {
    private let state = Locked<(opened: Bool, failure: RecognitionError?, waiting: [CheckedContinuation<Void, Never>])>((false, nil, []))

    func open(failing failure: RecognitionError? = nil) {
        let waiting = state.withLock { state in
            state.opened = true
            state.failure = failure
            defer { state.waiting = [] }
            return state.waiting
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Waits until opened; the failure it was opened with.
    func passed() async -> RecognitionError? {
        await withCheckedContinuation { waiter in
            let opened = state.withLock { state in
                if !state.opened { state.waiting.append(waiter) }
                return state.opened
            }
            if opened { waiter.resume() }
        }
        return state.withLock { $0.failure }
    }
}

final class FakeDecoder: SpeechDecoder {
    let detectorWarmUp: Double
    private var words: [String] = []
    private var count = 0
    private(set) var discards = 0

    init(warmUp: Double) { detectorWarmUp = warmUp }

    func process(_ samples: [Int16]) throws -> Bool {
        guard samples.contains(where: { abs(Int($0)) > 1000 }) else { return false }
        count += 1
        words.append("w\(count)")
        return true
    }

    func partial() -> String? { words.isEmpty ? nil : words.joined(separator: " ") }

    func finish() throws -> RecognitionResult {
        defer { words = [] }
        return RecognitionResult(text: words.joined(separator: " "), confidence: words.isEmpty ? 0 : 0.5,
                                 words: words.map { RecognizedWord(word: $0, start: 0, end: 0.1, confidence: 0.5) })
    }

    func discard() throws {
        discards += 1
        words = []
    }

    func hearNext(searching: Bool, newStream: Bool) throws {}
}

/// A microphone the test feeds by hand.
final class FakeCapture: AudioCapture {
    private let state = Locked<(opened: [FakeStream], failure: CaptureError?)>(([], nil))

    /// Makes the next `open` fail.
    func failNextOpen(_ error: CaptureError) { state.withLock { $0.failure = error } }

    var streams: [FakeStream] { state.withLock { $0.opened } }

    func open(source: String?) async throws -> any CaptureStream {
        try state.withLock { state in
            if let failure = state.failure {
                state.failure = nil
                throw failure
            }
            let stream = FakeStream(source: source)
            state.opened.append(stream)
            return stream
        }
    }
}

final class FakeStream: CaptureStream {
    let source: String?
    let chunks: AsyncStream<[Int16]>
    private let feed: AsyncStream<[Int16]>.Continuation
    private let state = Locked<(closed: Bool, failure: CaptureError?, corked: [Bool])>((false, nil, []))

    init(source: String?) {
        self.source = source
        (chunks, feed) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// 0.1 s of loud or quiet audio.
    func send(speech: Bool, count: Int = 1) {
        for _ in 0..<count { feed.yield([Int16](repeating: speech ? 5000 : 0, count: 1600)) }
    }

    /// The recording ends by itself, as when the server goes away.
    func fail(_ error: CaptureError) {
        state.withLock { $0.failure = error }
        feed.finish()
    }

    var isClosed: Bool { state.withLock { $0.closed } }
    /// Every setCorked, in order.
    var corkings: [Bool] { state.withLock { $0.corked } }

    func setCorked(_ corked: Bool) async { state.withLock { $0.corked.append(corked) } }
    var failure: CaptureError? { get async { state.withLock { $0.failure } } }

    func close() async {
        state.withLock { $0.closed = true }
        feed.finish()
    }
}

/// Files from memory: path → samples; a descriptor N is the file "fd:N"; "/endless" never ends
/// (it keeps a decoder until stopped).
struct FakeFiles: AudioFiles {
    let files: [String: [Int16]]

    func open(path: String) throws -> any AudioFile {
        if path == "/endless" { return EndlessFile() }
        if path == "/huge" { return EndlessFile(duration: 100_000) }
        guard let samples = files[path] else { throw RecognitionError.unreadableAudio("\(path): No such file or directory") }
        return FakeFile(samples: samples)
    }

    func open(descriptor: Int32) throws -> any AudioFile {
        try open(path: "fd:\(descriptor)")
    }
}

final class FakeFile: AudioFile {
    private var samples: ArraySlice<Int16>
    let duration: Double?
    init(samples: [Int16]) {
        self.samples = samples[...]
        duration = Double(samples.count) / 16_000
    }

    func read(maxSamples: Int) throws -> [Int16] {
        let chunk = samples.prefix(maxSamples)
        samples = samples.dropFirst(chunk.count)
        return Array(chunk)
    }
}

/// Streams from memory: descriptor → what its writer does.
struct FakeStreams: AudioStreams {
    let streams: [Int32: ScriptedStream]

    func open(_ input: StreamInput) throws -> any AudioStream {
        guard let script = streams[input.descriptor] else { throw RecognitionError.invalidStream("it is a character device") }
        return FakeAudioStream(script, idleSeconds: input.idleSeconds)
    }
}

/// What a scripted stream's writer sends, then whether it closes its end or stalls.
struct ScriptedStream: Sendable {
    var samples: [Int16]
    var stallsAfter = false
    /// Sends in real time (a read of N samples takes N / 16 kHz), as a live source does.
    var realTime = false
}

/// A stall ends a read at a wake or after the idle bound, as the real stream's poll does.
final class FakeAudioStream: AudioStream {
    private var samples: ArraySlice<Int16>
    private let stalls: Bool
    private let realTime: Bool
    private let idleSeconds: Double
    private let woken = Locked(false)
    private(set) var stop: AudioStreamStop?
    private(set) var closed = false
    var parking: AudioStreamParking?

    init(_ script: ScriptedStream, idleSeconds: Double) {
        samples = script.samples[...]
        stalls = script.stallsAfter
        realTime = script.realTime
        self.idleSeconds = idleSeconds
    }

    var duration: Double? { nil }

    var waker: AudioStreamWaker {
        let woken = woken
        return AudioStreamWaker { woken.withLock { $0 = true } }
    }

    private(set) var writerIdle = false
    private var stalledSince: ContinuousClock.Instant?

    func read(maxSamples: Int) throws -> [Int16] {
        writerIdle = false
        if woken.withLock({ $0 }) { stop = .woken }
        guard stop == nil else { return [] }
        let chunk = samples.prefix(maxSamples)
        samples = samples.dropFirst(chunk.count)
        if realTime { usleep(UInt32(chunk.count * 1_000_000 / 16_000)) }
        if chunk.isEmpty, stalls {
            let started = stalledSince ?? .now
            stalledSince = started
            if let parking {
                // As the real stream: parked after `parking.after`, and short after
                // `parking.releaseAfter`, for the reader to give its decoder back.
                let idleEnd = started + .seconds(idleSeconds)
                wait(until: min(idleEnd, .now + parking.after))
                guard stop == nil else { return [] }
                parking.park()
                wait(until: min(idleEnd, started + parking.releaseAfter))
                if stop == nil { writerIdle = true }
            } else {
                wait(until: started + .seconds(idleSeconds))
            }
        }
        return Array(chunk)
    }

    /// The writer never sends again: only the idle bound or a wake ends the wait.
    func waitForWriter(upTo patience: Duration?) throws -> WriterWait {
        writerIdle = false
        guard stop == nil, stalls, samples.isEmpty else { return .audio }
        let idleEnd = (stalledSince ?? .now) + .seconds(idleSeconds)
        wait(until: patience.map { min(idleEnd, .now + $0) } ?? idleEnd)
        return stop == nil ? .silent : .stopped
    }

    func startTurn() {}

    /// Nothing is read ahead: the script is the writer's, not read yet.
    var readAheadLimit = 0
    var buffered: Int { 0 }
    var hasEnded: Bool { false }
    func takeBuffered() -> [Int16] { [] }

    private func wait(until deadline: ContinuousClock.Instant) {
        while !woken.withLock({ $0 }), .now < deadline { usleep(1000) }
        if woken.withLock({ $0 }) {
            stop = .woken
        } else if .now >= (stalledSince ?? .now) + .seconds(idleSeconds) {
            stop = .idle
        }
    }

    func close() { closed = true }
}

/// Quiet audio without end, a millisecond per chunk (so that it holds a decoder without
/// spinning a core).
final class EndlessFile: AudioFile {
    let duration: Double?
    init(duration: Double? = nil) { self.duration = duration }
    func read(maxSamples: Int) throws -> [Int16] {
        usleep(1000)
        return [Int16](repeating: 0, count: min(maxSamples, 160))
    }
}

/// Records what the service announces, and lets a test make a caller leave.
final class RecordingBus: ServiceBus {
    private let state = Locked<(signals: [RecordedSignal], properties: [RecordedProperty],
                               watches: [UInt64: (caller: String, onVanish: @Sendable (String) -> Void)], next: UInt64)>(([], [], [:], 1))

    var signals: [RecordedSignal] { state.withLock { $0.signals } }
    var properties: [RecordedProperty] { state.withLock { $0.properties } }
    var watchedCallers: [String] { state.withLock { $0.watches.values.map(\.caller).sorted() } }

    func emit<each Argument>(_ signal: BusSignal<repeat each Argument>, _ arguments: repeat each Argument) {
        var values: [any Sendable] = []
        for argument in repeat each arguments { values.append(argument) }
        let recorded = RecordedSignal(signal.name, values)
        state.withLock { $0.signals.append(recorded) }
    }

    func publish<Value>(_ property: BusProperty<Value>, _ value: Value) {
        let recorded = RecordedProperty(property.name, value)
        state.withLock { $0.properties.append(recorded) }
    }

    func watchCaller(_ caller: String, onVanish: @escaping @Sendable (String) -> Void) -> UInt64 {
        state.withLock { state in
            defer { state.next += 1 }
            state.watches[state.next] = (caller, onVanish)
            return state.next
        }
    }

    func unwatchCaller(_ token: UInt64) { state.withLock { _ = $0.watches.removeValue(forKey: token) } }

    func vanish(_ caller: String) {
        let handlers = state.withLock { state in
            let mine = state.watches.filter { $0.value.caller == caller }
            for key in mine.keys { state.watches[key] = nil }
            return mine.values.map(\.onVanish)
        }
        for handler in handlers { handler(caller) }
    }
}
