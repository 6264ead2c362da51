import CSpeechd
import Dispatch
import Glibc
import VoiceboxCore

/// Everything mutable of one synthesizer, owned by one serial queue.
///
/// `@unchecked Sendable` is safe because every stored `var` is read and written only on `queue`:
/// the public entry points hop there (`queue.async`, or `queue.sync` in `shutdown`, which is never
/// called on `queue`), libspeechd notices come in through `receive`, which only enqueues, connection
/// attempts run on `connector` but hand their result back with `queue.async`, and every timer fires on
/// `queue`. `dispatchPrecondition` checks this at the entry points. All `let`s are Sendable values or
/// are themselves only used on `queue` (the continuation yields only from `queue`).
/// Every `spd_*` call on the speaking connection happens on `queue` as well (the only exception is
/// spd_open2, made on `connector` before the connection is published).
final class SpeechdCore: SpeechdNoticeReceiver, @unchecked Sendable {
    typealias Configuration = SpeechDispatcherSynthesizer.Configuration

    let queue = DispatchQueue(label: "voicebox.speechd.owner")
    private let connector = DispatchQueue(label: "voicebox.speechd.connector")
    private let configuration: Configuration
    private let continuation: AsyncStream<SynthesisEvent>.Continuation

    // MARK: State (only on `queue`)

    /// The live speaking connection and what was recorded when it was set up.
    private struct Link {
        let connection: UnsafeMutablePointer<SPDConnection>
        let generation: UInt64
        let clientID: Int
        let routerToken: UInt64
        let watcher: HangupWatcher
        let defaultModule: String?
        let defaultLanguage: String?
        let defaultVolume: Int32
    }

    private enum Phase {
        /// The first connection attempt has not finished: speak() waits for it.
        case starting
        case connected(Link)
        case disconnected(reason: String)
        case shutDown
    }

    private enum Stage {
        /// Only here (paused): not given to speech-dispatcher yet, or taken back from it by pause().
        case held
        /// Given to speech-dispatcher, which has not begun it.
        case queued(messageID: Int)
        /// speech-dispatcher reported its begin.
        case speaking(messageID: Int)

        var messageID: Int? {
            switch self {
            case .held: nil
            case .queued(let id), .speaking(let id): id
            }
        }
    }

    private struct Utterance {
        let request: SynthesisRequest
        let sequence: UInt64
        var stage: Stage
        var started = false
    }

    /// What a speech-dispatcher message id stands for.
    private enum Track {
        /// One of our utterances, still waiting for its end.
        case live(UInt64)
        /// A message whose utterance has already been finished (stopped or paused): its remaining
        /// notices are swallowed. `stopOnBegin`: it was stopped while queued in speech-dispatcher, so
        /// it gets spd_stop as soon as it begins.
        case ghost(stopOnBegin: Bool)
    }

    private var phase: Phase = .starting
    private var utterances: [UInt64: Utterance] = [:]
    private var tracks: [Int: Track] = [:]
    private var nextSequence: UInt64 = 0
    private var paused = false
    /// speak() calls made while the first connection attempt runs.
    private var parked: [(request: SynthesisRequest, continuation: CheckedContinuation<Void, any Error>)] = []

    private var generation: UInt64 = 0
    private var attemptInFlight = false
    private var lastAttemptStart: DispatchTime?
    private var retry: DispatchWorkItem?
    /// Delay before the next reconnection attempt: 0.25 s doubling up to 10 s, reset on success.
    private var backoff = SpeechdCore.initialBackoff

    static let initialBackoff = 0.25
    static let maximumBackoff = 10.0
    /// speak() while disconnected tries at once if the last attempt is older than this.
    static let eagerRetryAge = 1.0

    init(configuration: Configuration, continuation: AsyncStream<SynthesisEvent>.Continuation) {
        self.configuration = configuration
        self.continuation = continuation
        _ = SpeechdRouter.sigpipeIgnored
        queue.async { self.attemptConnect() }
    }

    // MARK: Entry points (any thread)

    func speak(_ request: SynthesisRequest) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async {
                if case .starting = self.phase {
                    self.parked.append((request, continuation))
                    return
                }
                continuation.resume(with: Result { try self.submit(request) })
            }
        }
    }

    func stop(_ ids: [UInt64]) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.stopOnQueue(ids)
                continuation.resume()
            }
        }
    }

    func pause() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.pauseOnQueue()
                continuation.resume()
            }
        }
    }

    func resume() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.resumeOnQueue()
                continuation.resume()
            }
        }
    }

    /// Synchronous: when it returns, the connection is closed, the watcher thread has ended and the
    /// event stream is finished. Must not be called on `queue`.
    func shutdown() {
        dispatchPrecondition(condition: .notOnQueue(queue))
        queue.sync { shutdownOnQueue() }
    }

    /// From a libspeechd event thread, through the router: hop at once.
    func receive(_ notice: SpeechdNotice, messageID: Int, generation: UInt64) {
        queue.async { self.handle(notice, messageID: messageID, generation: generation) }
    }

    // MARK: Speaking

    private func submit(_ request: SynthesisRequest) throws(SynthesizerError) {
        dispatchPrecondition(condition: .onQueue(queue))
        let link: Link
        switch phase {
        case .connected(let current):
            link = current
        case .disconnected(let reason):
            retrySoonIfStale()
            throw .unavailable(reason)
        case .starting:
            throw .unavailable("connecting to speech-dispatcher")
        case .shutDown:
            throw .unavailable("the synthesizer was shut down")
        }
        guard utterances[request.id] == nil else {
            throw .rejected("utterance \(request.id) is already queued")
        }
        var utterance = Utterance(request: request, sequence: nextSequence, stage: .held)
        nextSequence += 1
        if !paused {
            let messageID = try send(request, on: link)
            utterance.stage = .queued(messageID: messageID)
            // Registered in the same queue block as spd_say: a notice about this message (even one that
            // libspeechd delivered before spd_say returned) is handled after this block.
            tracks[messageID] = .live(request.id)
        }
        utterances[request.id] = utterance
    }

    /// Sets every per-utterance parameter (they are sticky per connection), then spd_say.
    private func send(_ request: SynthesisRequest, on link: Link) throws(SynthesizerError) -> Int {
        let connection = link.connection
        let outcome: Result<Int, SynthesizerError> = SpeechdRouter.shared.staticBuffers.withLock { _ in
            // Setting the output module also clears a synthesis voice set before; setting the
            // language does not (measured with speech-dispatcher 0.11.4), hence this order.
            if let voice = request.voice {
                guard spd_set_output_module(connection, voice.engine) == 0 else {
                    return .failure(.rejected("speech-dispatcher refused output module \"\(voice.engine)\""))
                }
                let language = request.language ?? (voice.language.isEmpty ? link.defaultLanguage : voice.language)
                if let language, spd_set_language(connection, language) != 0 {
                    return .failure(.rejected("speech-dispatcher refused language \"\(language)\""))
                }
                guard spd_set_synthesis_voice(connection, voice.name) == 0 else {
                    return .failure(.rejected("speech-dispatcher refused voice \"\(voice.name)\""))
                }
            } else {
                if let module = link.defaultModule, spd_set_output_module(connection, module) != 0 {
                    return .failure(.rejected("speech-dispatcher refused output module \"\(module)\""))
                }
                if let language = request.language ?? link.defaultLanguage,
                   spd_set_language(connection, language) != 0 {
                    return .failure(.rejected("speech-dispatcher refused language \"\(language)\""))
                }
            }
            guard spd_set_voice_rate(connection, SpeechdMapping.rate(request.rate)) == 0,
                  spd_set_voice_pitch(connection, SpeechdMapping.pitch(request.pitch)) == 0,
                  spd_set_volume(connection, request.volume.map(SpeechdMapping.volume) ?? link.defaultVolume) == 0
            else {
                return .failure(.rejected("speech-dispatcher refused rate, pitch or volume"))
            }
            guard spd_set_data_mode(connection, request.ssml ? SPD_DATA_SSML : SPD_DATA_TEXT) == 0 else {
                return .failure(.rejected("speech-dispatcher refused the data mode"))
            }
            let payload = SpeechdMapping.payload(text: request.text, ssml: request.ssml)
            let messageID = spd_say(connection, SpeechdMapping.priority(request.priority), payload)
            guard messageID >= 0 else { return .failure(.rejected("speech-dispatcher refused the text")) }
            return .success(Int(messageID))
        }
        switch outcome {
        case .success(let messageID):
            return messageID
        case .failure(let refusal):
            if let reason = lossReason(link) {
                connectionLost(reason)
                throw .unavailable(reason)
            }
            throw refusal
        }
    }

    /// After a failed command: was it speech-dispatcher going away?
    private func lossReason(_ link: Link) -> String? {
        if link.watcher.isHungUp || SpeechdConnector.eventThreadEnded(link.connection) {
            return "speech-dispatcher closed the connection"
        }
        return nil
    }

    // MARK: Notices

    private func handle(_ notice: SpeechdNotice, messageID: Int, generation: UInt64) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .connected(let link) = phase, link.generation == generation,
              let track = tracks[messageID] else { return }
        switch track {
        case .ghost(let stopOnBegin):
            switch notice {
            case .begin where stopOnBegin:
                tracks[messageID] = .ghost(stopOnBegin: false)
                command(spd_stop, on: link)
            case .end, .cancel:
                tracks[messageID] = nil
            case .begin, .mark:
                break
            }
        case .live(let id):
            guard var utterance = utterances[id] else {
                tracks[messageID] = nil
                return
            }
            switch notice {
            case .begin:
                utterance.stage = .speaking(messageID: messageID)
                let first = !utterance.started
                utterance.started = true
                utterances[id] = utterance
                if first { continuation.yield(.started(id)) }
            case .mark(let name):
                if !SpeechdMapping.isInternalMark(name) { continuation.yield(.mark(id, name)) }
            case .end:
                tracks[messageID] = nil
                finish(id, .done)
            case .cancel:
                // Every cancel we asked for turned the message into a ghost first: this one is
                // speech-dispatcher's own doing (a message of higher priority, or a newer text).
                tracks[messageID] = nil
                finish(id, .interrupted)
            }
        }
    }

    // MARK: Stop, pause, resume

    private func stopOnQueue(_ ids: [UInt64]) {
        dispatchPrecondition(condition: .onQueue(queue))
        let targets = Set(ids).compactMap { utterances[$0] }.sorted { $0.sequence < $1.sequence }
        guard !targets.isEmpty else { return }
        let inEngine = utterances.values.filter { $0.stage.messageID != nil }.count
        let targetsInEngine = targets.filter { $0.stage.messageID != nil }.count
        // speech-dispatcher cannot cancel one message by id: CANCEL SELF when all of ours go, else
        // STOP SELF for the one being spoken and a stop at the begin of each queued one.
        let cancelAll = targetsInEngine > 0 && targetsInEngine == inEngine
        var stopCurrent = false
        for utterance in targets {
            switch utterance.stage {
            case .held:
                break
            case .queued(let messageID):
                tracks[messageID] = .ghost(stopOnBegin: !cancelAll)
            case .speaking(let messageID):
                tracks[messageID] = .ghost(stopOnBegin: false)
                stopCurrent = true
            }
            finish(utterance.request.id, .cancelled)
        }
        guard case .connected(let link) = phase else { return }
        if cancelAll {
            command(spd_cancel, on: link)
        } else if stopCurrent {
            command(spd_stop, on: link)
        }
    }

    /// speech-dispatcher 0.11.4's own PAUSE wedges the whole server when it arrives after the output
    /// module has synthesized the message (no more speech for any client until it restarts; upstream
    /// brailcom/speechd#813, fixed in 0.12), and drops the rest of the message otherwise. So pausing
    /// takes our messages back instead: CANCEL SELF, keep them here, and resume() gives them again
    /// (the one that was being spoken starts over). Their notices in between are swallowed and no
    /// second `.started` is reported.
    private func pauseOnQueue() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard !paused else { return }
        paused = true
        guard case .connected(let link) = phase else { return }
        var any = false
        for (id, utterance) in utterances {
            guard let messageID = utterance.stage.messageID else { continue }
            tracks[messageID] = .ghost(stopOnBegin: false)
            utterances[id]?.stage = .held
            any = true
        }
        if any { command(spd_cancel, on: link) }
    }

    private func resumeOnQueue() {
        dispatchPrecondition(condition: .onQueue(queue))
        guard paused else { return }
        paused = false
        let held = utterances.values.filter { if case .held = $0.stage { true } else { false } }
            .sorted { $0.sequence < $1.sequence }
        for utterance in held {
            guard case .connected(let link) = phase else { return }
            let id = utterance.request.id
            do {
                let messageID = try send(utterance.request, on: link)
                utterances[id]?.stage = .queued(messageID: messageID)
                tracks[messageID] = .live(id)
            } catch {
                // A lost connection has finished every utterance already; a refusal ends this one.
                if utterances[id] != nil { finish(id, .error) }
            }
        }
    }

    /// STOP SELF / CANCEL SELF (literal commands: no static buffer involved).
    private func command(_ function: (UnsafeMutablePointer<SPDConnection>?) -> Int32, on link: Link) {
        if function(link.connection) != 0, let reason = lossReason(link) {
            connectionLost(reason)
        }
    }

    private func finish(_ id: UInt64, _ end: SynthesisEnd) {
        guard utterances.removeValue(forKey: id) != nil else { return }
        continuation.yield(.finished(id, end))
    }

    private func finishAll(_ end: SynthesisEnd) {
        let all = utterances.values.sorted { $0.sequence < $1.sequence }
        utterances.removeAll()
        tracks.removeAll()
        for utterance in all { continuation.yield(.finished(utterance.request.id, end)) }
    }

    // MARK: Connecting

    private func attemptConnect() {
        dispatchPrecondition(condition: .onQueue(queue))
        switch phase {
        case .starting, .disconnected: break
        case .connected, .shutDown: return
        }
        guard !attemptInFlight else { return }
        retry?.cancel()
        retry = nil
        attemptInFlight = true
        lastAttemptStart = .now()
        generation += 1
        let attempt = generation
        let configuration = self.configuration
        connector.async {
            let result = SpeechdConnector.open(address: configuration.address, autospawn: configuration.autospawn,
                                               clientName: configuration.clientName, connectionName: "speech",
                                               mode: SPD_MODE_THREADED)
            self.queue.async { self.attemptFinished(result, generation: attempt) }
        }
    }

    private func attemptFinished(_ result: Result<SpeechdHandle, SynthesizerError>, generation attempt: UInt64) {
        attemptInFlight = false
        if case .shutDown = phase {
            if case .success(let handle) = result { SpeechdConnector.closeGracefully(handle.connection) }
            return
        }
        switch result.flatMap({ setUp($0.connection, generation: attempt) }) {
        case .success(let link):
            phase = .connected(link)
            backoff = Self.initialBackoff
            continuation.yield(.available)
            let waiting = parked
            parked.removeAll()
            for (request, waiter) in waiting {
                waiter.resume(with: Result { try submit(request) })
            }
        case .failure(let error):
            let reason = Self.reason(of: error)
            if case .starting = phase {
                phase = .disconnected(reason: reason)
                continuation.yield(.unavailable(reason: reason))
                let waiting = parked
                parked.removeAll()
                for (_, waiter) in waiting { waiter.resume(throwing: SynthesizerError.unavailable(reason)) }
            } else {
                phase = .disconnected(reason: reason)
            }
            scheduleRetry()
        }
    }

    /// Client id, defaults, callbacks, notifications, watcher. Closes the connection on failure.
    private func setUp(_ connection: UnsafeMutablePointer<SPDConnection>,
                       generation attempt: UInt64) -> Result<Link, SynthesizerError> {
        let clientID = Int(spd_get_client_id(connection))
        guard clientID > 0 else {
            SpeechdConnector.closeGracefully(connection)
            return .failure(.unavailable("speech-dispatcher did not answer"))
        }
        let defaultModule = Self.take(spd_get_output_module(connection))
        let defaultLanguage = Self.take(spd_get_language(connection))
        let defaultVolume = spd_get_volume(connection)
        let watcher = HangupWatcher(connection: SpeechdHandle(connection: connection)) { [weak self] reason in
            guard let self else { return }
            self.queue.async { self.hungUp(reason, generation: attempt) }
        }
        guard let watcher else {
            SpeechdConnector.closeGracefully(connection)
            return .failure(.unavailable("speech-dispatcher closed the connection"))
        }
        connection.pointee.callback_begin = SpeechdRouter.beginCallback
        connection.pointee.callback_end = SpeechdRouter.endCallback
        connection.pointee.callback_cancel = SpeechdRouter.cancelCallback
        connection.pointee.callback_im = SpeechdRouter.markCallback
        let token = SpeechdRouter.shared.register(clientID: clientID, eventThread: SpeechdConnector.eventThread(connection),
                                                  generation: attempt, receiver: self)
        let notifying = SpeechdRouter.shared.staticBuffers.withLock { _ in
            spd_set_notification_on(connection, SPD_ALL)
        }
        guard notifying == 0 else {
            SpeechdRouter.shared.unregister(token: token)
            watcher.stop()
            SpeechdConnector.closeGracefully(connection)
            return .failure(.unavailable("speech-dispatcher refused notifications"))
        }
        return .success(Link(connection: connection, generation: attempt, clientID: clientID, routerToken: token,
                             watcher: watcher, defaultModule: defaultModule, defaultLanguage: defaultLanguage,
                             defaultVolume: defaultVolume))
    }

    private func hungUp(_ reason: String, generation attempt: UInt64) {
        guard case .connected(let link) = phase, link.generation == attempt else { return }
        connectionLost(reason)
    }

    /// Every utterance ends with `.error`, then `.unavailable`, then reconnection in the background.
    private func connectionLost(_ reason: String) {
        dispatchPrecondition(condition: .onQueue(queue))
        guard case .connected(let link) = phase else { return }
        phase = .disconnected(reason: reason)
        SpeechdRouter.shared.unregister(token: link.routerToken)
        link.watcher.stop()
        finishAll(.error)
        continuation.yield(.unavailable(reason: reason))
        retire(SpeechdHandle(connection: link.connection), checks: 0)
        scheduleRetry()
    }

    /// Closes a connection whose server went away, once libspeechd's event thread has ended (it
    /// closes the descriptor itself; see `closeAfterEventThreadEnded`). It ends as soon as it reads the
    /// end of the socket, so this normally closes on the first or second check.
    private func retire(_ handle: SpeechdHandle, checks: Int) {
        if SpeechdConnector.eventThreadEnded(handle.connection) {
            // The thread sets `stream` just before it signals and exits: give it that moment.
            queue.asyncAfter(deadline: .now() + .milliseconds(20)) {
                SpeechdConnector.closeAfterEventThreadEnded(handle.connection)
            }
        } else if checks >= 200 {
            spd_close(handle.connection) // still reading after 2 s: cancel it the ordinary way
        } else {
            queue.asyncAfter(deadline: .now() + .milliseconds(10)) { self.retire(handle, checks: checks + 1) }
        }
    }

    private func scheduleRetry() {
        retry?.cancel()
        let work = DispatchWorkItem { [weak self] in self?.attemptConnect() }
        retry = work
        queue.asyncAfter(deadline: .now() + backoff, execute: work)
        backoff = min(backoff * 2, Self.maximumBackoff)
    }

    /// speak() while disconnected: try now rather than at the next timer, unless we just tried.
    private func retrySoonIfStale() {
        guard !attemptInFlight else { return }
        if let last = lastAttemptStart,
           DispatchTime.now().uptimeNanoseconds - last.uptimeNanoseconds < UInt64(Self.eagerRetryAge * 1e9) {
            return
        }
        attemptConnect()
    }

    private func shutdownOnQueue() {
        let previous = phase
        if case .shutDown = previous { return }
        phase = .shutDown
        retry?.cancel()
        retry = nil
        let waiting = parked
        parked.removeAll()
        for (_, waiter) in waiting {
            waiter.resume(throwing: SynthesizerError.unavailable("the synthesizer was shut down"))
        }
        finishAll(.cancelled)
        if case .connected(let link) = previous {
            SpeechdRouter.shared.unregister(token: link.routerToken)
            _ = spd_cancel(link.connection)
            link.watcher.stop() // before the server hangs up on QUIT
            SpeechdConnector.closeGracefully(link.connection)
        }
        continuation.finish()
    }

    /// A string libspeechd allocated, copied and freed.
    private static func take(_ pointer: UnsafeMutablePointer<CChar>?) -> String? {
        guard let pointer else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }
}

extension SpeechdCore {
    static func reason(of error: SynthesizerError) -> String {
        switch error {
        case .unavailable(let reason), .rejected(let reason): reason
        }
    }
}
