/// Speaking: the behaviour behind Speak, StopSpeaking, PauseSpeaking, ResumeSpeaking,
/// ListVoices and RefreshVoices, over a Synthesizer and a ServiceBus.
public actor SpeechService {
    public static let version = "0.1.0"

    private struct Utterance {
        let caller: String
        /// Spoken with `wait`: the caller is waiting for it, so it ends if the caller leaves.
        /// Fire-and-forget speech outlives its caller, as with spd-say.
        let owedToCaller: Bool
        var started = false
        var waiters: [CheckedContinuation<SynthesisEnd, Never>] = []
    }

    private let synthesizer: any Synthesizer
    private let bus: any ServiceBus
    public let voices: VoiceCache

    private var utterances: [UInt64: Utterance] = [:]
    private var nextID: UInt64 = 1
    /// Watches on callers with utterances in flight, so their leaving cancels them.
    private var callerWatches: [String: UInt64] = [:]
    private var engineProblem: String?
    private var speaking = false

    public init(synthesizer: any Synthesizer, bus: any ServiceBus, voicePolicy: VoiceCache.Policy = .init()) {
        self.synthesizer = synthesizer
        self.bus = bus
        voices = VoiceCache(policy: voicePolicy, lister: { try await synthesizer.listVoices() }, onChange: { list in
            bus.publish(.voiceCount(UInt32(clamping: list.count)))
            bus.emit(.voicesChanged)
        })
    }

    /// Publishes the properties and starts warming the voice cache. Call before taking the
    /// bus name, so the first caller (perhaps the one that activated us) finds them.
    public func start() async {
        bus.publish(.version(Self.version))
        bus.publish(.speaking(false))
        bus.publish(.voiceCount(0))
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
    /// has been spoken, stopped or failed).
    public func speak(_ text: String, options: SpeakOptions, caller: String) async throws(VoiceboxError) -> UInt64 {
        guard text.utf8.count <= SpeakOptions.maximumTextBytes else {
            throw .init(.tooLarge, "text is \(text.utf8.count) bytes; the limit is \(SpeakOptions.maximumTextBytes)")
        }
        guard text.contains(where: { !$0.isWhitespace }) else {
            throw .invalidArgument("text is empty: there is nothing to speak")
        }
        if let engineProblem { throw .engineUnavailable(engineProblem) }
        var voice: Voice?
        if let id = options.voice {
            voice = try await voices.get().first { $0.id == id }
            guard voice != nil else { throw .init(.unknownVoice, "no voice '\(id)'; ListVoices gives the ids") }
        } else if let language = options.language {
            voice = VoiceMatching.best(try await voices.get(), for: language)
            guard voice != nil else { throw .init(.unsupportedLanguage, "no voice speaks '\(language)'") }
        }
        let id = nextID
        nextID += 1
        utterances[id] = Utterance(caller: caller, owedToCaller: options.wait)
        if options.wait { watch(caller) }
        let request = SynthesisRequest(id: id, text: text, ssml: options.ssml, priority: options.priority, voice: voice,
                                       language: nil, rate: options.rate, pitch: options.pitch, volume: options.volume)
        do {
            try await synthesizer.speak(request)
        } catch {
            utterances[id] = nil
            unwatchIfIdle(caller)
            switch error as? SynthesizerError {
            case .rejected(let why): throw .init(.failed, "speech-dispatcher refused the text: \(why)")
            case .unavailable(let why): throw .engineUnavailable(why)
            case nil: throw .engineUnavailable("\(error)")
            }
        }
        if options.wait {
            _ = await finish(of: id)
        }
        return id
    }

    /// Waits until utterance `id` has ended; nil if there is no such utterance in flight.
    private func finish(of id: UInt64) async -> SynthesisEnd? {
        guard utterances[id] != nil else { return nil }
        return await withCheckedContinuation { utterances[id]?.waiters.append($0) }
    }

    /// Stops one of the caller's utterances, or (id 0) all of them.
    public func stopSpeaking(_ id: UInt64, caller: String) async throws(VoiceboxError) {
        let ids: [UInt64]
        if id == 0 {
            ids = utterances.filter { $0.value.caller == caller }.map(\.key).sorted()
        } else {
            guard let utterance = utterances[id] else { return }  // already over: nothing to do
            guard utterance.caller == caller else {
                throw .invalidArgument("utterance \(id) belongs to another caller")
            }
            ids = [id]
        }
        if !ids.isEmpty { await synthesizer.stop(ids) }
    }

    public func pauseSpeaking() async throws(VoiceboxError) {
        do { try await synthesizer.pause() } catch { throw .engineUnavailable("\(error)") }
    }

    public func resumeSpeaking() async throws(VoiceboxError) {
        do { try await synthesizer.resume() } catch { throw .engineUnavailable("\(error)") }
    }

    // MARK: Voices

    public func listVoices(language: String) async throws(VoiceboxError) -> [Voice] {
        guard language.isEmpty || LanguageTag.isWellFormed(language) else {
            throw .invalidArgument("'\(language)' is not a BCP-47 language tag")
        }
        return try await voices.voices(for: language)
    }

    public func refreshVoices() async {
        await voices.refresh()
    }

    // MARK: Engine events

    private func handle(_ event: SynthesisEvent) async {
        switch event {
        case .started(let id):
            guard utterances[id] != nil else { return }
            utterances[id]?.started = true
            bus.emit(.speechStarted(id))
            updateSpeaking()
        case .mark(let id, let name):
            guard utterances[id] != nil else { return }
            bus.emit(.speechMark(id, name))
        case .finished(let id, let end):
            guard let utterance = utterances.removeValue(forKey: id) else { return }
            bus.emit(.speechFinished(id, end))
            for waiter in utterance.waiters { waiter.resume(returning: end) }
            unwatchIfIdle(utterance.caller)
            updateSpeaking()
        case .unavailable(let reason):
            engineProblem = "speech-dispatcher is unreachable: \(reason)"
        case .available:
            engineProblem = nil
            await voices.refresh()
        }
    }

    private func updateSpeaking() {
        let now = utterances.values.contains { $0.started }
        guard now != speaking else { return }
        speaking = now
        bus.publish(.speaking(now))
    }

    // MARK: Callers

    private func watch(_ caller: String) {
        guard callerWatches[caller] == nil else { return }
        callerWatches[caller] = bus.watchCaller(caller) { [weak self] name in
            Task { await self?.callerLeft(name) }
        }
    }

    private func unwatchIfIdle(_ caller: String) {
        guard !utterances.values.contains(where: { $0.caller == caller && $0.owedToCaller }),
              let token = callerWatches.removeValue(forKey: caller) else { return }
        bus.unwatchCaller(token)
    }

    /// A caller that left the bus can no longer get the reply it was waiting for.
    private func callerLeft(_ caller: String) async {
        callerWatches[caller] = nil
        let ids = utterances.filter { $0.value.caller == caller && $0.value.owedToCaller }.map(\.key).sorted()
        if !ids.isEmpty { await synthesizer.stop(ids) }
    }
}
