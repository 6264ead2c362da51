import VoiceboxContract

/// One recognition, from opening its audio to its answer.
///
/// It runs on a dispatch queue of its own (`QueueExecutor`): a caller's stream and a file worker's
/// pipe are still read in poll(2) there, which keeps Swift's cooperative pool free for the bus and
/// the other recognitions. A decoder worker's answers are awaited without a thread
/// (`DecoderWorker`): the run is suspended meanwhile. The decoder and the audio are not
/// thread-safe; living in this actor's isolation (their async calls are
/// `nonisolated(nonsending)`, run on its executor), they are only touched from this queue.
///
/// Stop and cancel requests arrive through `control`, checked at every chunk of audio.
actor RecognitionRun {
    /// What a recognition uses of the service: its engine, audio sources, bus, session and bounds.
    struct Dependencies: Sendable {
        var engine: any RecognitionEngine
        var capture: any AudioCapture
        var files: any AudioFiles
        var streams: any AudioStreams
        var bus: any ServiceBus
        var session: AudioSession?
        /// Shared by all streams: what they may keep to hear a cut utterance again.
        var replays = MemoryBudget(bytes: RecognitionService.replayBudgetBytes)
        /// Shared by all streams: what they may read ahead and keep (`FastStream`).
        var readAhead = MemoryBudget(bytes: RecognitionService.readAheadBudgetBytes)
        /// The streams' waits and holds and the long files' parts (`Bound`).
        var bounds = Bounds()
    }

    static let sampleRate = 16_000.0

    let id: UInt64
    let options: RecognizeOptions
    /// The model's language tag, already matched.
    let language: String
    let dependencies: Dependencies
    let control: RecognitionControl

    private let executor = QueueExecutor(label: "voicebox.recognition")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Whether RecognitionStarted went out (and so RecognitionFinished must follow).
    private var started = false
    private var partials = PartialReporter()
    /// The highest RecognitionProgress sent: it never goes back (a long file's parts count audio
    /// decoded on every core, more than a stop keeps).
    private var progressSent = 0.0
    /// A microphone recognition's decoder, loaded while the microphone opens (`listen`).
    var earlyDecoder: (any SpeechDecoder)?

    init(id: UInt64, options: RecognizeOptions, language: String, dependencies: Dependencies, control: RecognitionControl) {
        self.id = id
        self.options = options
        self.language = language
        self.dependencies = dependencies
        self.control = control
    }

    /// Recognizes, and always ends a started recognition with RecognitionFinished.
    func run() async -> Result<Recognition, VoiceboxError> {
        let outcome: Result<Recognition, VoiceboxError>
        do throws(VoiceboxError) {
            switch options.input {
            case .microphone(let source): outcome = .success(try await listen(source: source))
            case .file(let path): outcome = .success(try await read { try dependencies.files.open(path: path) })
            case .descriptor(let fd): outcome = .success(try await read { try dependencies.files.open(descriptor: fd) })
            case .stream(let input): outcome = .success(try await read(stream: input))
            }
        } catch {
            // A cancel ends a decoder mid-call (`RecognitionControl.attachDecoder`): whatever that
            // broke, the caller asked for nothing else.
            outcome = .failure(control.request == .cancel ? RecognitionFault.cancelled : error)
        }
        if started {
            dependencies.bus.emit(Speech1.recognitionFinished, id, (try? outcome.get())?.result.text ?? "")
        }
        return outcome
    }

    // MARK: Shared steps

    func makeDecoder() async throws(VoiceboxError) -> any SpeechDecoder {
        do {
            let decoder = try await dependencies.engine.makeDecoder(options.configuration(language: language))
            control.attachDecoder(decoder)
            return decoder
        } catch {
            throw RecognitionFault.describe(error, options: options)
        }
    }

    func begin() {
        started = true
        dependencies.bus.emit(Speech1.recognitionStarted, id)
    }

    /// The answer when a stop or cancel came before any audio was taken: nothing heard.
    func endedBeforeStart() throws(VoiceboxError) -> Recognition? {
        switch control.request {
        case nil: return nil
        case .cancel: throw RecognitionFault.cancelled
        case .stop: return Recognition(id: id, result: .empty, duration: 0, end: .stopped, language: language)
        case .interrupt: return Recognition(id: id, result: .empty, duration: 0, end: .interrupted, language: language)
        }
    }

    /// Sends RecognitionPartial when the caller asked for it, the guess changed and the last
    /// one went out at least 0.1 s ago. `earlier`: text of utterances already finished.
    /// Asking the decoder at every chunk is cheap (pocketsphinx: 7 ms for 240 chunks).
    func reportPartial(_ decoder: any SpeechDecoder, after earlier: [RecognitionResult] = []) async {
        guard options.partialResults else { return }
        let current = await decoder.partial().map { [RecognitionResult(text: $0, confidence: 0, words: [])] } ?? []
        reportPartial(heard: earlier + current)
    }

    /// Sends RecognitionProgress: `fraction` of the audio decoded, never less than already sent.
    /// Files only, as the contract says: a stream read in parts sends none.
    func reportProgress(_ fraction: Double) {
        if case .stream = options.input { return }
        progressSent = max(progressSent, min(1, fraction))
        dependencies.bus.emit(Speech1.recognitionProgress, id, progressSent)
    }

    /// The same for utterances already heard, without a decoder's guess. `whole`: the final
    /// text, sent even within 0.1 s of the last partial, so that the partials end with all of it.
    func reportPartial(heard: [RecognitionResult], whole: Bool = false) {
        guard options.partialResults else { return }
        let text = RecognitionResult(joining: heard).text
        if partials.shouldSend(text, at: .now, whole: whole) { dependencies.bus.emit(Speech1.recognitionPartial, id, text) }
    }

    func decode(_ decoder: any SpeechDecoder, _ samples: [Int16]) async throws(VoiceboxError) -> Bool {
        do { return try await decoder.process(samples) } catch { throw RecognitionFault.describe(error, options: options) }
    }

    func drop(_ decoder: any SpeechDecoder) async throws(VoiceboxError) {
        do { try await decoder.discard() } catch { throw RecognitionFault.describe(error, options: options) }
    }

    func finish(_ decoder: any SpeechDecoder) async throws(VoiceboxError) -> RecognitionResult {
        do { return try await decoder.finish() } catch { throw RecognitionFault.describe(error, options: options) }
    }
}

/// RecognitionPartial's rules: only a text that changed, at most 10 a second (a long file's final
/// text excepted: `whole`). A change held
/// back by the limit goes out with the next chunk after it, if the text still differs then.
struct PartialReporter: Sendable {
    private var limiter = RateLimiter(perSecond: 10)
    private var last = ""

    mutating func shouldSend(_ text: String, at now: ContinuousClock.Instant, whole: Bool = false) -> Bool {
        guard text != last, whole || limiter.allow(at: now) else { return false }
        last = text
        return true
    }
}
