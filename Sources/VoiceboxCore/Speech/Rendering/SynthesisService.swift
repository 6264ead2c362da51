import VoiceboxContract

/// The behaviour behind org.freedesktop.Speech.Provider: the voices offered (`Voices`) and
/// Synthesize, which checks everything, keeps the caller's pipe and returns at once; the rendering
/// is written while the caller reads (`RenderQueue`).
///
/// A voice is offered when ListVoices shows it and its engine renders into memory (probed); the
/// others are left out, never offered and then silent.
public actor SynthesisService {
    public static let pitches: ClosedRange<Double> = 0...2
    public static let rates: ClosedRange<Double> = 0.1...10

    private let voices: VoiceCache
    private let renderer: any SpeechRenderer
    private let queue: RenderQueue
    private var publish: @Sendable (OfferedVoices) -> Void = { _ in }
    private var callers: CallerTracker
    /// The voice list and the engines that render.
    private var offered = OfferedVoices()
    private var published = false
    private var publishedWaiters: [CheckedContinuation<Void, Never>] = []
    /// Renderings not finished, by id: whose they are and their ticket (once the queue gave it).
    /// A caller that leaves the bus takes its own with it.
    private var live: [UInt64: (caller: String, ticket: UInt64?)] = [:]
    private var nextID: UInt64 = 1

    /// `bus` only watches callers.
    public init(voices: VoiceCache, renderer: any SpeechRenderer, queue: RenderQueue, bus: any ServiceBus) {
        self.voices = voices
        self.renderer = renderer
        self.queue = queue
        callers = CallerTracker(bus: bus)
    }

    /// Follows the voice list: each change is probed and given to `publish`.
    public func start(publishing publish: @escaping @Sendable (OfferedVoices) -> Void) async {
        self.publish = publish
        await voices.observe { [weak self] list in Task { await self?.update(list) } }
        if let list = await voices.current {
            await update(list)
        } else {
            let voices = voices
            Task { _ = try? await voices.get() }  // a first listing, unless one is under way
        }
    }

    /// Returns once a first voice list has been published, or after `bound`.
    public func waitForVoices(atMost bound: Duration) async {
        guard !published else { return }
        let timeout = Task { [weak self] in
            try? await Task.sleep(for: bound)
            await self?.releaseWaiters()
        }
        await withCheckedContinuation { publishedWaiters.append($0) }
        timeout.cancel()
    }

    private func update(_ list: [Voice]) async {
        let found = await renderer.engines(among: Set(list.map(\.engine)))
        offered = OfferedVoices(all: list, engines: Dictionary(found.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first }))
        publish(offered)
        published = true
        releaseWaiters()
    }

    private func releaseWaiters() {
        for waiter in publishedWaiters { waiter.resume() }
        publishedWaiters = []
    }

    /// Synthesize: every argument checked before anything is written; then the rendering is
    /// queued and this returns. `fd` is the caller's, valid for the call.
    public func synthesize(caller: String, fd: Int32, text: String, voiceID: String, pitch: Double, rate: Double,
                           ssml: Bool, language: String) async throws(VoiceboxError) {
        guard Self.pitches.contains(pitch) else { throw .invalidArgument("pitch must be between 0 and 2, not \(pitch)") }
        guard Self.rates.contains(rate) else { throw .invalidArgument("rate must be between 0.1 and 10, not \(rate)") }
        guard text.utf8.count <= Speech1.maximumTextBytes else {
            throw .init(.tooLarge, "text is \(text.utf8.count) bytes; the limit is \(Speech1.maximumTextBytes)")
        }
        guard language.isEmpty || LanguageTag.isWellFormed(language) else {
            throw .invalidArgument("'\(language)' is not a BCP-47 language tag")
        }
        let markup = ssml ? SpeechMarkup(ssml: try SSMLDocument(text), callerText: text) : SpeechMarkup(plain: text)
        let (voice, engine) = try voice(voiceID, language: language)
        let descriptor = try OutputDescriptor.take(fd, accepting: .pipe, what: "pipe_fd")
        let id = nextID
        nextID += 1
        let request = RenderRequest(id: id, engine: engine.name, language: voice?.language ?? renderer.defaultLanguage,
                                    voiceName: voice?.name, markup: markup, rate: rate,
                                    pitch: Int(((pitch - 1) * 100).rounded()))
        let target = RenderTarget(descriptor: descriptor, encoding: engine.reportsMarks ? .spiel : .raw)
        live[id] = (caller, nil)
        callers.watch(caller) { [weak self] name in Task { await self?.left(name) } }
        let job = RenderQueue.Job(request, into: target, caller: caller) { [weak self] event in
            guard case .finished = event else { return }
            Task { await self?.ended(id) }
        }
        do {
            let ticket = try await queue.submit(job)
            live[id]?.ticket = ticket  // unless it has finished already
        } catch {
            ended(id)
            throw error
        }
    }

    /// The voice for `id`, or for `language` when `id` is empty (nil: the default), and its engine.
    private func voice(_ id: String, language: String) throws(VoiceboxError) -> (Voice?, RenderEngine) {
        if !id.isEmpty {
            guard let found = offered.voice(withID: id) else {
                throw .init(.unknownVoice, "no voice '\(id)' renders into memory; Voices lists the ones that do")
            }
            return found
        }
        if !language.isEmpty {
            guard let best = VoiceMatching.best(offered.offered, for: language), let engine = offered.engines[best.engine] else {
                throw .init(.unsupportedLanguage, "no voice that renders into memory speaks '\(language)'")
            }
            return (best, engine)
        }
        let engines = offered.engines
        guard let engine = engines[renderer.defaultEngine] ?? engines.values.sorted(by: { $0.name < $1.name }).first else {
            throw .engineUnavailable("no output module renders into memory")
        }
        return (nil, engine)
    }

    private func ended(_ id: UInt64) {
        guard let entry = live.removeValue(forKey: id) else { return }
        callers.release(entry.caller, stillBusy: live.values.contains { $0.caller == entry.caller })
    }

    /// A caller that left takes its renderings with it: nobody is left to read them.
    private func left(_ caller: String) async {
        callers.left(caller)
        let theirs = live.filter { $0.value.caller == caller }
        for (id, entry) in theirs {
            live[id] = nil
            if let ticket = entry.ticket { await queue.cancel(ticket) }
        }
    }
}
