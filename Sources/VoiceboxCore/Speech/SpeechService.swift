import VoiceboxContract

/// Speaking: the behaviour behind Speak, StopSpeaking, StopAllSpeaking, PauseSpeaking,
/// ResumeSpeaking, ListVoices and RefreshVoices, over a Synthesizer and a ServiceBus.
///
/// Nothing here waits on another caller: the synthesizer bounds every exchange with its engine,
/// and stopping or pausing never waits for the engine at all.
public actor SpeechService {
    struct Utterance {
        let caller: String
        /// Spoken with `wait`: the caller is waiting for it, so it ends if the caller leaves.
        /// Fire-and-forget speech outlives its caller, as with spd-say.
        let owedToCaller: Bool
        var started = false
        var waiters: [CheckedContinuation<SynthesisEnd, Never>] = []
        /// Why it ended with `.error`, when the engine said.
        var failure: String?
        /// The audio session has been told it began: its end must be told too.
        var interruptingOthers = false
        /// Written into the caller's `output`, not played (SpeechService+Output); its queue ticket.
        var rendered = false
        var ticket: UInt64?
    }

    let synthesizer: any Synthesizer
    let bus: any ServiceBus
    /// What renders Speak's `output` (nil: the option is refused).
    let renderer: (any SpeechRenderer)?
    let renderQueue: RenderQueue?
    /// Pauses or ducks other audio while speaking; nil leaves it alone.
    private let session: AudioSession?
    public let voices: VoiceCache

    var utterances: [UInt64: Utterance] = [:]
    /// Why an utterance spoken with `wait` failed, kept from its end until `outcome(of:)` reads it.
    private var failures: [UInt64: String] = [:]
    var nextID: UInt64 = 1
    /// Callers waiting for speech or holding a pause: their leaving releases both.
    private var callers: CallerTracker
    /// Who paused: speech is held while anyone does.
    private var pauseHolders: Set<String> = []
    /// A call has the audio (AudioSession): speech is held as if paused.
    var heldByCall = false
    /// What the synthesizer was last told, and whether telling it is under way: pause and resume
    /// reach it in the order the holders changed, one at a time.
    private var enginePaused = false
    private var applyingPause = false
    private(set) var engineProblem: String?
    private var speaking = false

    public init(synthesizer: any Synthesizer, bus: any ServiceBus, session: AudioSession? = nil,
                voicePolicy: VoiceCache.Policy = .init(), renderer: (any SpeechRenderer)? = nil, renderQueue: RenderQueue? = nil) {
        self.synthesizer = synthesizer
        self.bus = bus
        self.renderer = renderer
        self.renderQueue = renderQueue
        self.session = session
        callers = CallerTracker(bus: bus)
        voices = VoiceCache(policy: voicePolicy, lister: { try await synthesizer.listVoices() }, onChange: { list in
            bus.publish(Speech1.voiceCount, UInt32(clamping: list.count))
            bus.emit(Speech1.voicesChanged)
        })
    }

    /// Publishes the properties and starts warming the voice cache. Call before taking the
    /// bus name, so the first caller (perhaps the one that activated us) finds them.
    public func start() async {
        bus.publish(Speech1.version, Release.version)
        bus.publish(Speech1.speaking, false)
        bus.publish(Speech1.paused, false)
        bus.publish(Speech1.voiceCount, 0)
        await voices.refresh()
    }

    /// Follows the engine's events until the synthesizer's stream ends.
    public func run() async {
        for await event in synthesizer.events {
            await handle(event)
        }
    }

    // MARK: Speaking

    /// Queues `text`; returns its id once the engine accepted it (or, with `wait`, once it
    /// has been spoken, stopped or failed). While speech is paused it is queued and held.
    public func speak(_ text: String, options: SpeakOptions, caller: String) async throws(VoiceboxError) -> UInt64 {
        let id = try await admit(text, options: options, caller: caller)
        return options.wait ? try await outcome(of: id) : id
    }

    /// Queues `text` and returns its id once the engine accepted it, with `wait` or not; `outcome(of:)`
    /// then waits for its end. For callers that answer later than they admit.
    public func admit(_ text: String, options: SpeakOptions, caller: String) async throws(VoiceboxError) -> UInt64 {
        guard text.utf8.count <= Speech1.maximumTextBytes else {
            throw .init(.tooLarge, "text is \(text.utf8.count) bytes; the limit is \(Speech1.maximumTextBytes)")
        }
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw .invalidArgument("text is empty: there is nothing to speak")
        }
        if let output = options.output { return try await admitOutput(text, into: output, options: options, caller: caller) }
        // SSML is checked before anything else happens: a document that could wedge the engine for
        // every program is refused, naming what is wrong.
        let text = options.ssml ? try SSMLDocument(text).text : text
        if let engineProblem { throw .engineUnavailable(engineProblem) }
        var voice: Voice?
        if let id = options.voice {
            voice = try await voices.get().first { $0.id == id }
            guard voice != nil else { throw .init(.unknownVoice, "no voice '\(id)'; ListVoices gives the ids") }
        } else if let language = options.language {
            voice = try await voices.best(for: language)
            guard voice != nil else { throw .init(.unsupportedLanguage, "no voice speaks '\(language)'") }
        }
        let id = nextID
        nextID += 1
        utterances[id] = Utterance(caller: caller, owedToCaller: options.wait)
        if options.wait { watch(caller) }
        // Others are paused or lowered while speech-dispatcher prepares the first word (about 60 ms),
        // not one after the other: a pause of other audio takes a few round trips to the sound
        // server and the players, which would otherwise delay the speech by as much.
        let request = SynthesisRequest(id: id, text: text, ssml: options.ssml, priority: options.priority, voice: voice,
                                       language: nil, rate: options.rate, pitch: options.pitch, volume: options.volume)
        let policy = options.others ?? session?.settings.speakingDefault ?? .mix
        async let interrupting: Void = session?.begin(.speaking, id: id, policy: policy) ?? ()
        let outcome: Result<Void, any Error>
        do {
            try await synthesizer.speak(request)
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        await interrupting
        // Its end is told to the session only once its beginning was: an utterance over already
        // (refused, or a very short one) ends its interruption here.
        if utterances[id] == nil || outcome.isFailure {
            await session?.end(.speaking, id: id)
        } else {
            utterances[id]?.interruptingOthers = true
        }
        if case .failure(let error) = outcome {
            utterances[id] = nil
            release(caller)
            switch error as? SynthesizerError {
            case .rejected(let why): throw .init(.failed, "speech-dispatcher refused the text: \(why)")
            case .unavailable(let why): throw .engineUnavailable(why)
            case nil: throw .engineUnavailable("\(error)")
            }
        }
        return id
    }

    /// What a caller that waited for utterance `id` (`wait`) is answered: its id, or, when the engine
    /// failed it, EngineUnavailable saying what happened.
    public func outcome(of id: UInt64) async throws(VoiceboxError) -> UInt64 {
        if utterances[id] != nil {
            _ = await withCheckedContinuation { utterances[id]?.waiters.append($0) }
        }
        if let failure = failures.removeValue(forKey: id) { throw .engineUnavailable(failure) }
        return id
    }

    /// Stops utterance `id`, whoever queued it (ids are announced in signals, and the session bus
    /// is one user's); 0 stops everything the caller queued. An id already over is no error.
    public func stopSpeaking(_ id: UInt64, caller: String) async {
        let ids = id == 0 ? utterances.filter { $0.value.caller == caller }.map(\.key) : [id].filter { utterances[$0] != nil }
        await stop(ids.sorted())
    }

    /// Stops every caller's speech (what is heard: not what is written into an `output`).
    public func stopAllSpeaking() async {
        let ids = utterances.filter { !$0.value.rendered }.map(\.key).sorted()
        if !ids.isEmpty { await synthesizer.stop(ids) }
    }

    /// Holds speech until this caller resumes or leaves the bus (and every other holder has too).
    public func pauseSpeaking(caller: String) async {
        guard pauseHolders.insert(caller).inserted else { return }
        watch(caller)
        if pauseHolders.count == 1 { bus.publish(Speech1.paused, true) }
        await applyPause()
    }

    /// Releases this caller's pause; nothing to do if it holds none.
    public func resumeSpeaking(caller: String) async {
        guard pauseHolders.remove(caller) != nil else { return }
        release(caller)
        if pauseHolders.isEmpty { bus.publish(Speech1.paused, false) }
        await applyPause()
    }

    /// Tells the synthesizer to pause or resume until it matches the holders, one call at a time.
    func applyPause() async {
        guard !applyingPause else { return }
        applyingPause = true
        defer { applyingPause = false }
        while enginePaused != (!pauseHolders.isEmpty || heldByCall) {
            let target = !pauseHolders.isEmpty || heldByCall
            // Neither waits on the engine; a failure leaves nothing to undo here.
            if target { try? await synthesizer.pause() } else { try? await synthesizer.resume() }
            enginePaused = target
        }
    }

    public var isPaused: Bool { !pauseHolders.isEmpty }

    // MARK: Voices

    /// Nonisolated: the cache is an actor of its own, and a ListVoices need not queue behind speech.
    public nonisolated func listVoices(language: String) async throws(VoiceboxError) -> [Voice] {
        guard language.isEmpty || LanguageTag.isWellFormed(language) else {
            throw .invalidArgument("'\(language)' is not a BCP-47 language tag")
        }
        return try await voices.voices(for: language)
    }

    public func refreshVoices() async {
        await voices.refresh()
    }

    // MARK: Engine events

    func handle(_ event: SynthesisEvent) async {
        switch event {
        case .started(let id):
            guard utterances[id] != nil else { return }
            utterances[id]?.started = true
            bus.emit(Speech1.speechStarted, id)
            updateSpeaking()
        case .mark(let id, let name):
            guard utterances[id] != nil else { return }
            bus.emit(Speech1.speechMark, id, name)
        case .failed(let id, let reason):
            guard utterances[id] != nil else { return }
            utterances[id]?.failure = reason
        case .finished(let id, let end):
            guard let utterance = utterances.removeValue(forKey: id) else { return }
            if end == .error, utterance.owedToCaller, let failure = utterance.failure { failures[id] = failure }
            bus.emit(Speech1.speechFinished, id, end)
            for waiter in utterance.waiters { waiter.resume(returning: end) }
            release(utterance.caller)
            updateSpeaking()
            if utterance.interruptingOthers { await session?.end(.speaking, id: id) }
        case .unavailable(let reason):
            engineProblem = "speech-dispatcher is unreachable: \(reason)"
        case .available:
            engineProblem = nil
            await voices.refreshUnlessListing()
        }
    }

    /// Speaking: an utterance has started and is not held. Held by a call, nothing is heard: false.
    func updateSpeaking() {
        let now = !heldByCall && utterances.values.contains { $0.started && !$0.rendered }
        guard now != speaking else { return }
        speaking = now
        bus.publish(Speech1.speaking, now)
    }

    // MARK: Callers

    func watch(_ caller: String) {
        callers.watch(caller) { [weak self] name in Task { await self?.callerLeft(name) } }
    }

    func release(_ caller: String) {
        let busy = pauseHolders.contains(caller)
            || utterances.values.contains { $0.caller == caller && $0.owedToCaller }
        callers.release(caller, stillBusy: busy)
    }

    /// A caller that left the bus can no longer get the reply it was waiting for, nor resume
    /// what it paused: both are released.
    private func callerLeft(_ caller: String) async {
        callers.left(caller)
        await stop(utterances.filter { $0.value.caller == caller && $0.value.owedToCaller }.map(\.key).sorted())
        if pauseHolders.remove(caller) != nil {
            if pauseHolders.isEmpty { bus.publish(Speech1.paused, false) }
            await applyPause()
        }
    }
}

private extension Result {
    var isFailure: Bool { if case .failure = self { true } else { false } }
}
