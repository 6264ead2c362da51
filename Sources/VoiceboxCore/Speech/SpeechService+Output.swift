import Glibc
import VoiceboxContract

/// Speak with `output`: the utterance is written as a WAV file into the caller's descriptor instead
/// of being played. Its id, SpeechStarted (its first audio written), SpeechMark (once the audio
/// before the mark is written), SpeechFinished and `wait` are those of played speech; nothing of it
/// reaches speech-dispatcher or the sound server, so no other audio is ducked or paused, and
/// Speaking stays false. PauseSpeaking does not hold it (nothing is heard) and StopAllSpeaking
/// leaves it (it stops what is heard); StopSpeaking with its id, or 0 from its caller, stops it.
/// A reader of a pipe that closes its end stops it too (SpeechFinished "cancelled").
extension SpeechService {
    func admitOutput(_ text: String, into fd: Int32, options: SpeakOptions, caller: String) async throws(VoiceboxError) -> UInt64 {
        guard let renderer, let renderQueue else { throw .engineUnavailable("this service writes no speech into files") }
        let markup = options.ssml ? SpeechMarkup(ssml: try SSMLDocument(text), callerText: text) : SpeechMarkup(plain: text)
        let (voice, engine) = try await outputVoice(options, renderer: renderer)
        let descriptor = try OutputDescriptor.take(fd, accepting: .pipeOrRegularFile, what: "option 'output'")
        let seekable = if case .regularFile(let offset) = descriptor.kind { offset != nil } else { false }
        let id = nextID
        nextID += 1
        utterances[id] = Utterance(caller: caller, owedToCaller: options.wait, rendered: true)
        if options.wait { watch(caller) }
        // Played speech's mappings (SpeechdMapping), so that the file sounds as it would be heard;
        // the volume scales the engine's own level (1: as espeak-ng writes it), which played
        // speech's 100 would clip.
        let request = RenderRequest(id: id, engine: engine.name, language: voice?.language ?? renderer.defaultLanguage,
                                    voiceName: voice?.name, markup: markup, rate: options.rate,
                                    pitch: Int(min(100, max(-100, (100 * log2(options.pitch)).rounded()))),
                                    volume: Int(((options.volume ?? 1) * 100 - 100).rounded()))
        // The events one after another, in order, into the actor.
        let (events, delivered) = AsyncStream.makeStream(of: RenderEvent.self)
        Task { [weak self] in
            for await event in events { await self?.rendered(id, event) }
        }
        let job = RenderQueue.Job(request, into: RenderTarget(descriptor: descriptor, encoding: .wav(seekable: seekable)),
                                  caller: caller) { event in
            delivered.yield(event)
            if case .finished = event { delivered.finish() }
        }
        do {
            let ticket = try await renderQueue.submit(job)
            utterances[id]?.ticket = ticket  // unless it is over already
        } catch {
            utterances[id] = nil
            release(caller)
            throw error
        }
        return id
    }

    /// The voice of `options` (nil: speech-dispatcher's default), which must render into memory.
    /// Without a voice or language the list is not needed: written speech needs no speech-dispatcher.
    private func outputVoice(_ options: SpeakOptions, renderer: any SpeechRenderer) async throws(VoiceboxError) -> (Voice?, RenderEngine) {
        if options.voice == nil, options.language == nil {
            guard let engine = await renderer.engines(among: [renderer.defaultEngine]).first else {
                throw .engineUnavailable("speech-dispatcher's default output module \(renderer.defaultEngine) does not render into memory")
            }
            return (nil, engine)
        }
        let all = try await voices.get()
        if let id = options.voice {
            guard let voice = all.first(where: { $0.id == id }) else {
                throw .init(.unknownVoice, "no voice '\(id)'; ListVoices gives the ids")
            }
            guard let engine = await renderer.engines(among: [voice.engine]).first else {
                throw .invalidArgument("voice '\(id)' cannot be written into 'output': its engine \(voice.engine) only plays")
            }
            return (voice, engine)
        }
        let engines = await renderer.engines(among: Set(all.map(\.engine)))
        let renderable = all.filter { voice in engines.contains { $0.name == voice.engine } }
        guard let language = options.language, let voice = VoiceMatching.best(renderable, for: language),
              let engine = engines.first(where: { $0.name == voice.engine }) else {
            throw .init(.unsupportedLanguage, "no voice that can be written into 'output' speaks '\(options.language ?? "")'")
        }
        return (voice, engine)
    }

    private func rendered(_ id: UInt64, _ event: RenderEvent) async {
        switch event {
        case .began: await handle(.started(id))
        case .mark(let name): await handle(.mark(id, name))
        case .engineReleased: break
        case .finished(.done): await handle(.finished(id, .done))
        case .finished(.cancelled), .finished(.readerGone): await handle(.finished(id, .cancelled))
        case .finished(.failed(let why)):
            await handle(.failed(id, reason: why))
            await handle(.finished(id, .error))
        }
    }

    /// Stops utterances, played or written, each where it is.
    func stop(_ ids: [UInt64]) async {
        let written = ids.filter { utterances[$0]?.rendered == true }
        for id in written {
            if let ticket = utterances[id]?.ticket { await renderQueue?.cancel(ticket) }
        }
        let played = ids.filter { utterances[$0]?.rendered != true }
        if !played.isEmpty { await synthesizer.stop(played) }
    }
}
