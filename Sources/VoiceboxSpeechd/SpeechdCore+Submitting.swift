import Dispatch
import VoiceboxCore

/// Giving utterances to speech-dispatcher. Settings are sticky per connection, so one utterance at a
/// time: its settings (pipelined), then — once all are accepted, and if it is still wanted — SPEAK.
/// The speak() caller waits for the 225 only, and for at most `timings.accept`: a server that is slow to
/// answer (stopped, wedged, busy) does not hold the caller up; the utterance stays queued here and its
/// fate comes as events (a refusal after that as `.error`). Every reply is bounded by the connection's
/// timeout, after which recovery takes over.
extension SpeechdCore {
    struct Submission {
        let token: UInt64
        let id: UInt64
        /// The speak() call waiting for the 225; nil when resume() gives a held utterance again, or
        /// once the caller was answered at `timings.accept`.
        var waiter: CheckedContinuation<Void, any Error>?
        var speakSent = false
        var refusal: String?
    }

    func submit(_ original: SynthesisRequest, waiter: CheckedContinuation<Void, any Error>) {
        let request: SynthesisRequest
        do {
            request = try Self.checked(original)
        } catch {
            return waiter.resume(throwing: error)
        }
        switch phase {
        case .connected:
            break
        case .recovering:
            return hold(request, waiter: waiter)
        case .disconnected(let reason):
            retrySoonIfStale()
            return waiter.resume(throwing: SynthesizerError.unavailable(reason))
        case .starting:
            return waiter.resume(throwing: SynthesizerError.unavailable("connecting to speech-dispatcher"))
        case .shutDown:
            return waiter.resume(throwing: SynthesizerError.unavailable("the synthesizer was shut down"))
        }
        guard utterances[request.id] == nil else {
            return waiter.resume(throwing: SynthesizerError.rejected("utterance \(request.id) is already queued"))
        }
        utterances[request.id] = Utterance(request: request, sequence: nextSequence, stage: .held)
        nextSequence += 1
        if paused { return waiter.resume() }
        let token = enqueueSubmission(of: request.id, waiter: waiter)
        pumpSubmissions()
        // A healthy server answers at once; the reply bound is for noticing a wedge, not for holding callers.
        queue.asyncAfter(deadline: .now() + timings.accept) { [weak self] in self?.onQueue { $0.answerIfStillWaiting(token) } }
    }

    /// The caller of submission `token`, if still waiting, is answered: queued.
    private func answerIfStillWaiting(_ token: UInt64) {
        if activeSubmission?.token == token, let waiter = activeSubmission?.waiter {
            activeSubmission?.waiter = nil
            waiter.resume()
        } else if let index = submissions.firstIndex(where: { $0.token == token }), let waiter = submissions[index].waiter {
            submissions[index].waiter = nil
            waiter.resume()
        }
    }

    /// The request as it may be sent: SSML must be a document speech-dispatcher cannot choke on
    /// (`SSMLDocument`; the service checks it first and names the problem to its caller).
    static func checked(_ request: SynthesisRequest) throws(SynthesizerError) -> SynthesisRequest {
        guard request.ssml else { return request }
        var checked = request
        do {
            checked.text = try SSMLDocument(request.text).text
        } catch {
            throw .rejected(error.message)
        }
        return checked
    }

    @discardableResult
    func enqueueSubmission(of id: UInt64, waiter: CheckedContinuation<Void, any Error>?) -> UInt64 {
        let token = nextToken
        nextToken += 1
        utterances[id]?.stage = .submitting(token: token)
        submissions.append(Submission(token: token, id: id, waiter: waiter))
        return token
    }

    /// Starts the next submission when none is under way.
    func pumpSubmissions() {
        while activeSubmission == nil, !submissions.isEmpty {
            guard case .connected(let link) = phase else { return }
            let next = submissions.removeFirst()
            guard let utterance = utterances[next.id], isSubmitting(utterance, next.token) else {
                next.waiter?.resume() // stopped or paused before its turn: accepted all the same
                continue
            }
            activeSubmission = next
            sendSettings(of: utterance.request, token: next.token, on: link)
        }
    }

    private func isSubmitting(_ utterance: Utterance, _ token: UInt64) -> Bool {
        if case .submitting(token) = utterance.stage { true } else { false }
    }

    private func sendSettings(of request: SynthesisRequest, token: UInt64, on link: Link) {
        let settings = Self.settings(for: request, link: link)
        for (index, setting) in settings.enumerated() {
            let last = index == settings.count - 1
            link.connection.send(setting.line) { [self] result in
                // A failed exchange ends the connection: connectionLost answers every waiter.
                guard case .success(let reply) = result, activeSubmission?.token == token else { return }
                if !reply.isSuccess && activeSubmission?.refusal == nil {
                    activeSubmission?.refusal = "speech-dispatcher refused \(setting.what) (\(reply.code) \(reply.text))"
                }
                if last { settingsAnswered(token: token, request: request, on: link) }
            }
        }
    }

    /// The per-utterance settings in the order that works: setting the output module also clears a
    /// synthesis voice set before; setting the language does not (measured with speech-dispatcher
    /// 0.11.4).
    static func settings(for request: SynthesisRequest, link: Link) -> [(line: [UInt8], what: String)] {
        var settings: [(line: [UInt8], what: String)] = []
        func set(_ name: String, _ value: String, _ what: String) {
            settings.append((SSIPText.command("SET", "self", name, value), what))
        }
        if let voice = request.voice {
            set("OUTPUT_MODULE", voice.engine, "output module \"\(voice.engine)\"")
            let language = request.language ?? (voice.language.isEmpty ? link.defaultLanguage : voice.language)
            if let language { set("LANGUAGE", language, "language \"\(language)\"") }
            set("SYNTHESIS_VOICE", voice.name, "voice \"\(voice.name)\"")
        } else {
            if let module = link.defaultModule { set("OUTPUT_MODULE", module, "output module \"\(module)\"") }
            if let language = request.language ?? link.defaultLanguage {
                set("LANGUAGE", language, "language \"\(language)\"")
            }
        }
        set("RATE", String(SpeechdMapping.rate(request.rate)), "the rate")
        set("PITCH", String(SpeechdMapping.pitch(request.pitch)), "the pitch")
        if let volume = request.volume.map({ Int(SpeechdMapping.volume($0)) }) ?? link.defaultVolume {
            set("VOLUME", String(volume), "the volume")
        }
        set("SSML_MODE", request.ssml ? "on" : "off", "the data mode")
        set("PRIORITY", SpeechdMapping.priority(request.priority), "the priority")
        return settings
    }

    private func settingsAnswered(token: UInt64, request: SynthesisRequest, on link: Link) {
        guard var active = activeSubmission, active.token == token else { return }
        if let refusal = active.refusal {
            activeSubmission = nil
            refuse(active, refusal)
            return pumpSubmissions()
        }
        guard let utterance = utterances[active.id], isSubmitting(utterance, token) else {
            activeSubmission = nil // stopped or paused meanwhile: no SPEAK at all
            active.waiter?.resume()
            return pumpSubmissions()
        }
        active.speakSent = true
        activeSubmission = active
        let text = SSIPText.speakData(request.text)
        link.connection.send(SSIPText.command("SPEAK"), text: text) { [self] result in
            guard case .success(let reply) = result else { return }
            speakAnswered(token: token, reply: reply)
        }
    }

    /// `225-<msgid>` / `225 OK MESSAGE QUEUED`. Registered in the same handler that reads the reply, so
    /// the message's notices (which follow the 225 on the stream) find it.
    private func speakAnswered(token: UInt64, reply: SSIPReply) {
        guard let active = activeSubmission, active.token == token else { return }
        activeSubmission = nil
        defer {
            pumpSubmissions()
            watchForStall()
        }
        let orphan = orphans.removeValue(forKey: token)
        let earlier = early
        early.removeAll()
        guard reply.code == 225, let messageID = reply.lines.first.flatMap({ Int($0) }) else {
            return refuse(active, "speech-dispatcher refused the text (\(reply.code) \(reply.text))")
        }
        if let utterance = utterances[active.id], isSubmitting(utterance, token) {
            utterances[active.id]?.stage = .queued(messageID: messageID)
            tracks[messageID] = .live(active.id)
            startHeartbeat()
            noteArrival()
        } else {
            tracks[messageID] = orphan ?? .ghost(stopOnBegin: false)
        }
        active.waiter?.resume()
        if case .connected(let link) = phase {
            for event in earlier where event.messageID == messageID { handle(event, generation: link.generation) }
        }
    }

    /// A refused utterance: a waiting speak() throws and the utterance leaves no events; one given
    /// again by resume() ends with `.error`.
    private func refuse(_ submission: Submission, _ refusal: String) {
        guard let utterance = utterances[submission.id], isSubmitting(utterance, submission.token) else {
            submission.waiter?.resume() // already stopped or paused: its end is reported elsewhere
            return
        }
        if let waiter = submission.waiter {
            utterances[submission.id] = nil
            waiter.resume(throwing: SynthesizerError.rejected(refusal))
        } else {
            finish(submission.id, .error)
        }
    }
}
