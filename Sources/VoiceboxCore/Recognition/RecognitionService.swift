import VoiceboxContract
import VoiceboxThreads

/// Recognizing: the behaviour behind Recognize, StopRecognition, CancelRecognition and
/// EndRecognition, over a RecognitionEngine, an AudioCapture, AudioFiles and a ServiceBus.
///
/// This actor only keeps the books (who recognizes what, the limits, callers leaving); each recognition runs
/// as a `RecognitionRun` on a queue of its own, so a long file never holds up a StopRecognition.
///
/// Limits: one microphone recognition at a time (a second fails at once with Busy: the microphone is one
/// person's); files decode `maxFileRecognitions` at once, each keeping a core busy, the rest wait their turn,
/// round-robin by caller (`FileRecognitionQueue`), up to `fileQueueLimit` in all and `fileQueuePerCaller` per
/// caller, past which they fail with Busy. A waiting file can be stopped or cancelled.
public actor RecognitionService {
    private struct Entry {
        let caller: String
        let microphone: Bool
        let dictation: Bool
        let control: RecognitionControl
        /// A microphone recognition until it released the microphone (it may still be decoding).
        var holdsMicrophone: Bool
    }

    private let dependencies: RecognitionRun.Dependencies
    private var fileTurns: FileRecognitionQueue {
        // Whichever way the queue moved, the streams that hold a decoder another caller's stream
        // waits for are told so, the one chosen per waiting stream that it must give it back even
        // inside speech (and the others that they no longer need to yield).
        didSet {
            let asked = fileTurns.streamsAskedToYield
            let cut = fileTurns.streamsAskedToCut
            for (id, entry) in entries where entry.control.parking != nil {
                entry.control.wantDecoder(atPause: asked.contains(id), inSpeech: cut.contains(id))
            }
            let othersWait = !fileTurns.waitingIDs.subtracting(lanes.values.joined()).isEmpty
            recognitionsWait.withLock { $0 = othersWait }
        }
    }
    /// Waiting files' tasks, resumed when their turn comes or they are withdrawn.
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var entries: [UInt64: Entry] = [:]
    /// The extra turns each long file's parts hold or wait for (`FileLanes`).
    private var lanes: [UInt64: Set<UInt64>] = [:]
    /// Long files that want no more turns for parts (all their parts are taken).
    private var closedLanes: Set<UInt64> = []
    /// Whether a file or stream waits for a turn, not counting long files' parts: read by parts
    /// as they decode, on their own queues.
    private let recognitionsWait = Locked(false)
    private var nextID: UInt64 = 1
    /// Callers with recognitions in flight, so their leaving cancels them.
    private var callers: CallerTracker

    /// A call holding the microphone: recordings are corked, and ended after the session's limit.
    private var callLimit: Task<Void, Never>?
    private var heldByCall = false

    public init(engine: any RecognitionEngine, capture: any AudioCapture, files: any AudioFiles, streams: any AudioStreams,
                bus: any ServiceBus, session: AudioSession? = nil, maxFileRecognitions: Int,
                replayBudgetBytes: Int = RecognitionService.replayBudgetBytes, bounds: Bounds = Bounds()) {
        dependencies = .init(engine: engine, capture: capture, files: files, streams: streams, bus: bus, session: session,
                             replays: MemoryBudget(bytes: replayBudgetBytes), bounds: bounds)
        fileTurns = FileRecognitionQueue(runningLimit: maxFileRecognitions, waitingLimit: Self.fileQueueLimit,
                                         waitingPerCaller: Self.fileQueuePerCaller, streamDecoderLimit: Self.streamDecoderLimit,
                                         streamDecodersPerCaller: Self.streamDecodersPerCaller)
        callers = CallerTracker(bus: bus)
    }

    /// Publishes the initial properties.
    public func run() {
        dependencies.bus.publish(Speech1.listening, false)
        dependencies.bus.publish(Speech1.listeningID, 0)
        dependencies.bus.publish(Speech1.dictationID, 0)
        dependencies.bus.publish(Speech1.recognitionLanguages, dependencies.engine.languages)
    }

    /// Admits a recognition and starts it; its answer comes from the returned handle. Admission
    /// is synchronous so that a StopRecognition sent right after Recognize finds it.
    public func start(_ options: RecognizeOptions, caller: String) throws(VoiceboxError) -> PendingRecognition {
        guard let language = RecognitionLanguageMatching.best(for: options.language, among: dependencies.engine.languages) else {
            throw .init(.unsupportedLanguage, "no recognition model for '\(options.language)'; RecognitionLanguages lists the languages")
        }
        let id = nextID
        let isStream = if case .stream = options.input { true } else { false }
        let waits = try admit(id, options, caller: caller, isStream: isStream)
        nextID += 1
        let control = RecognitionControl()
        entries[id] = Entry(caller: caller, microphone: options.isMicrophone, dictation: options.dictation, control: control,
                            holdsMicrophone: options.isMicrophone)
        if heldByCall && options.isMicrophone { _ = control.holdForCall(true) }
        callers.watch(caller) { [weak self] name in Task { await self?.callerLeft(name) } }
        // Published at admission, so that another process (a shortcut's second press) can end
        // it even while its model is still loading.
        if options.isMicrophone {
            dependencies.bus.publish(Speech1.listeningID, id)
            if options.dictation { dependencies.bus.publish(Speech1.dictationID, id) }
            control.microphoneReleased = { [weak self] in Task { await self?.releaseMicrophone(of: id) } }
        }
        if isStream {
            // A stream gives its turn back while its writer sends nothing (`park`), and its
            // decoder too if the writer stays silent (`release`), so that a stalled or slow writer
            // delays no one, and takes a turn again when audio comes; and it parks after each turn
            // of decoding, keeping its decoder, so that a steady one does not keep the cores from
            // others either.
            control.parking = StreamParking(park: { [weak self] in await self?.park(id) },
                                            release: { [weak self] in await self?.releaseDecoder(id) },
                                            resume: { [weak self] in await self?.resume(id, caller: caller) ?? false })
        }
        if !options.isMicrophone {  // a stream's, should it come fast (`RecognitionRun+ReadAhead`)
            control.lanes = FileLanes(extra: fileTurns.runningLimit - 1,
                                      take: { [weak self] in await self?.takeLane(for: id, caller: caller) },
                                      giveBack: { [weak self] in await self?.giveBack(lane: $0, of: id) },
                                      close: { [weak self] in await self?.closeLanes(of: id) },
                                      othersWait: { [recognitionsWait] in recognitionsWait.withLock { $0 } })
        }
        let session = RecognitionRun(id: id, options: options, language: language, dependencies: dependencies, control: control)
        let task = Task { [weak self] in
            if waits { await self?.turn(id) }
            let outcome = await session.run()
            await self?.ended(id)
            return outcome
        }
        return PendingRecognition(id: id, task: task)
    }

    /// Whether recognition `id` may start now (false: it waits for a turn), or Busy: the
    /// microphone is taken, or too many files and streams wait.
    private func admit(_ id: UInt64, _ options: RecognizeOptions, caller: String, isStream: Bool) throws(VoiceboxError) -> Bool {
        if options.isMicrophone {
            if let (id, _) = entries.first(where: { $0.value.holdsMicrophone }) {
                throw .init(.busy, "the microphone is in use by recognition \(id); one microphone recognition at a time")
            }
            return false
        }
        switch fileTurns.admit(id, caller: caller, stream: isStream) {
        case .run: return false
        case .wait: return true
        case .full(perCaller: true):
            throw .init(.busy, "\(Self.fileQueuePerCaller) of this caller's file or stream recognitions already wait "
                        + "(for a decoder, or a stream for its writer), the limit per caller; try again when one finishes")
        case .full(perCaller: false):
            throw .init(.busy, "\(Self.fileQueueLimit) file or stream recognitions already wait (for a decoder, or a "
                        + "stream for its writer), the limit; try again when one finishes")
        }
    }

    /// Ends the caller's recognitions now; each answers with what it heard so far (reason
    /// stopped). Nothing to do when the caller has none.
    public func stopRecognition(caller: String) async {
        await request(.stop, from: caller)
    }

    /// Ends the caller's recognitions now; each fails with Cancelled. Nothing to do when the
    /// caller has none.
    public func cancelRecognition(caller: String) async {
        await request(.cancel, from: caller)
    }

    /// Ends recognition `id`, whoever started it: with what was heard (reason stopped), or with
    /// Cancelled when `cancel`. An id that is not running is no error. Returns once its
    /// microphone, if it held one, is released.
    public func endRecognition(_ id: UInt64, cancel: Bool) async {
        guard let entry = entries[id] else { return }
        let microphone = entry.control.request(cancel ? .cancel : .stop)
        withdraw(id)
        await microphone?.close()
    }

    /// Returns once every microphone these recognitions held is released.
    private func request(_ request: RecognitionControl.Request, from caller: String) async {
        let mine = entries.filter { $0.value.caller == caller }
        let microphones = mine.compactMap { $0.value.control.request(request) }
        for id in mine.keys { withdraw(id) }
        for microphone in microphones { await microphone.close() }
    }

    /// Takes a waiting recognition out of the queue, and its parts' waiting turns.
    private func withdraw(_ id: UInt64) {
        if fileTurns.withdraw(id) { waiters.removeValue(forKey: id)?.resume() }
        closeLanes(of: id)
    }

    /// A turn for one more part of long file `id`: admitted as one more file of its caller.
    private func takeLane(for id: UInt64, caller: String) async -> UInt64? {
        guard let entry = entries[id], entry.control.request == nil, !closedLanes.contains(id) else { return nil }
        let lane = nextID
        nextID += 1
        lanes[id, default: []].insert(lane)  // first: a part's turn is never counted as another's wait
        switch fileTurns.admit(lane, caller: caller) {
        case .run:
            return lane
        case .wait:
            await withCheckedContinuation { waiters[lane] = $0 }
            guard fileTurns.isRunning(lane) else {
                lanes[id]?.remove(lane)
                return nil
            }
            return lane
        case .full:
            lanes[id]?.remove(lane)
            return nil
        }
    }

    /// No more turns for `id`'s parts: those that wait are withdrawn (their `take` gives nil).
    private func closeLanes(of id: UInt64) {
        closedLanes.insert(id)
        for lane in lanes[id] ?? [] where fileTurns.withdraw(lane) {
            lanes[id]?.remove(lane)
            waiters.removeValue(forKey: lane)?.resume()
        }
    }

    private func giveBack(lane: UInt64, of id: UInt64) {
        guard lanes[id]?.remove(lane) != nil else { return }
        if lanes[id]?.isEmpty == true { lanes[id] = nil }
        if let next = fileTurns.finished(lane) { waiters.removeValue(forKey: next)?.resume() }
    }

    /// Waits until file `id` gets a decoder, or is withdrawn (its session then ends at once, as
    /// its control holds the stop or cancel).
    private func turn(_ id: UInt64) async {
        guard fileTurns.isWaiting(id) else { return }
        await withCheckedContinuation { waiters[id] = $0 }
    }

    private func park(_ id: UInt64) {
        if let next = fileTurns.park(id) { waiters.removeValue(forKey: next)?.resume() }
    }

    private func releaseDecoder(_ id: UInt64) {
        if let next = fileTurns.releaseDecoder(id) { waiters.removeValue(forKey: next)?.resume() }
    }

    /// Waits for a decoder again; false when the recognition was stopped or cancelled meanwhile.
    private func resume(_ id: UInt64, caller: String) async -> Bool {
        guard let entry = entries[id], entry.control.request == nil else { return false }
        if fileTurns.isRunning(id) || fileTurns.resume(id, caller: caller) { return true }
        await withCheckedContinuation { waiters[id] = $0 }
        return fileTurns.isRunning(id)
    }

    private func ended(_ id: UInt64) {
        releaseMicrophone(of: id)
        guard let entry = entries.removeValue(forKey: id) else { return }
        // Its parts' turns, should any be left (a part's task gives its own back as it ends).
        closeLanes(of: id)
        closedLanes.remove(id)
        for lane in lanes.removeValue(forKey: id) ?? [] {
            if let next = fileTurns.finished(lane) { waiters.removeValue(forKey: next)?.resume() }
        }
        if !entry.microphone, let next = fileTurns.finished(id) { waiters.removeValue(forKey: next)?.resume() }
        callers.release(entry.caller, stillBusy: entries.values.contains { $0.caller == entry.caller })
    }

    /// Recognition `id` released the microphone (Listening false): the next may take it.
    private func releaseMicrophone(of id: UInt64) {
        guard let entry = entries[id], entry.holdsMicrophone else { return }
        entries[id]?.holdsMicrophone = false
        dependencies.bus.publish(Speech1.listeningID, 0)
        if entry.dictation { dependencies.bus.publish(Speech1.dictationID, 0) }
    }

    /// A caller that left the bus cannot take the answer: stop listening for it at once.
    private func callerLeft(_ caller: String) async {
        callers.left(caller)
        await request(.cancel, from: caller)
    }
}

extension RecognitionService: InterruptionTarget {
    /// A call took the audio: microphone recordings are corked (the microphone stays ours); one
    /// held longer than the session's limit ends with what it heard (reason interrupted).
    public func externalInterruptionBegan() async {
        heldByCall = true
        for entry in entries.values where entry.holdsMicrophone {
            await entry.control.holdForCall(true)?.setCorked(true)
        }
        guard let limit = dependencies.session?.settings.listeningInterruptionLimit else { return }
        callLimit?.cancel()
        callLimit = Task { [weak self] in
            try? await Task.sleep(for: limit)
            guard !Task.isCancelled else { return }
            await self?.endHeldRecordings()
        }
    }

    public func externalInterruptionEnded() async {
        heldByCall = false
        callLimit?.cancel()
        callLimit = nil
        for entry in entries.values where entry.holdsMicrophone {
            await entry.control.holdForCall(false)?.setCorked(false)
        }
    }

    private func endHeldRecordings() async {
        let microphones = entries.values.filter(\.holdsMicrophone).compactMap { $0.control.request(.interrupt) }
        for microphone in microphones { await microphone.close() }
    }
}
