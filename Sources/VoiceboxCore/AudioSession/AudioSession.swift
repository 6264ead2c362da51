import VoiceboxContract

/// The audio session: what Voicebox does to other audio while it speaks or listens, and what
/// it does when something more important (a call) takes the audio. Like AVAudioSession, every
/// begin and end is announced (AudioInterruption) and shown (property Interrupted).
///
/// Its jobs live in their own files, all on this one actor, which owns every piece of state:
/// - interrupting others (AudioSession+Others): pause, mute or duck them while Voicebox speaks or
///   listens, and give back exactly what was taken;
/// - the server's memory (AudioSession+Memory): what PulseAudio or WirePlumber remember of a stream
///   we changed is put back as it was, and a put-back the server lists late is let go once it does
///   (AudioSession+Pending);
/// - following the server (AudioSession+Events): newcomers, a server that restarts;
/// - yielding to calls (AudioSession+Calls);
/// - crash recovery (AudioSession+Recovery): undoing what a voiceboxd that died left changed;
/// and the journal's record-or-roll-back step (AudioSession+Journal) and the mixer's requests,
/// each failure logged with its stream (AudioSession+Mixer), which the jobs share.
///
/// Everything that happens reaches the actor as one `Input` on one stream, handled in order by
/// `run()`, one at a time to its end: no two changes interleave at their awaits.
public actor AudioSession {
    struct Activity: Hashable, Sendable {
        let reason: InterruptionReason
        let id: UInt64
    }

    enum Input: Sendable {
        case begin(Activity, OthersPolicy, CheckedContinuation<Void, Never>)
        case end(Activity)
        /// The grace timer `generation` ran out.
        case restoreDue(UInt64)
        /// Time to write the server's memory back again (pipewire-pulse; see AudioSession+Memory).
        case memoryDue(UInt64)
        /// Time to ask whether the server now holds what it was given late (see AudioSession+Pending).
        case pendingCheckDue(UInt64)
        case mixer(MixerEvent)
        case finish(CheckedContinuation<Void, Never>)
        /// Answers once every input before it has been handled.
        case drain(CheckedContinuation<Void, Never>)
    }

    let mixer: any AudioMixer
    let players: any MediaPlayers
    let bus: any ServiceBus
    public nonisolated let settings: AudioSessionSettings
    let kinds: StreamKinds
    let clock: any SessionClock
    /// The waits before each check of a put-back the server had not listed (AudioSession+Pending).
    let pendingCheckDelays: [Duration]
    let log: @Sendable (String) -> Void
    var journal: JournalKeeper

    private let inputs: AsyncStream<Input>
    let inputSink: AsyncStream<Input>.Continuation
    var targets: [any InterruptionTarget] = []

    // MARK: State (only `handle` and what it calls change it)

    /// Voicebox's own activities and what each asks of others.
    var activities: [Activity: OthersPolicy] = [:]
    /// What the interruption of others in progress did; nil while none is.
    var others: OthersInterruption?
    /// What a voiceboxd that died mid-interruption left changed, until it is undone.
    var leftover: InterruptionJournal?
    /// Memory entries to put back once the server is reached (it went away mid-interruption, or
    /// could not be written).
    var pendingMemory: [MemoryRecord] = []
    /// Entries just put back after a crash or the server's return, until when a stream that
    /// starts from a change of ours they held is set back, and the streams already set back (or,
    /// on PulseAudio, first seen with nothing of ours: decided).
    var repairing: [MemoryRecord] = []
    var repairUntil: Duration?
    var repaired: Set<UInt32> = []
    /// Entries taken from a stream too young to tell (pipewire-pulse: WirePlumber may not have
    /// applied its memory to it yet), and when they can be trusted: not written back before.
    var provisional: [String: Duration] = [:]
    /// Entries kept as they were after an interruption, while a stream we set back plays.
    var afterCare: [String: AfterCare] = [:]
    /// The streams as last reported, by index, and when each was first seen.
    var streams: [UInt32: PlaybackStream] = [:]
    var firstSeen: [UInt32: Duration] = [:]
    /// What the server is, as last read.
    var server: SoundServerInfo?
    /// Call streams in progress ("p12" playback, "r7" recording).
    var calls: Set<String> = []
    /// `began` went out for a call, and its `ended` is owed.
    var callAnnounced = false
    var interrupted = false
    var finished = false
    var restoreGeneration: UInt64 = 0
    var restoreTimer: SessionTimer?
    var memoryGeneration: UInt64 = 0
    var memoryTimer: SessionTimer?
    var pendingCheckGeneration: UInt64 = 0
    var pendingCheckTimer: SessionTimer?
    /// How many checks of `pendingMemory` this spell has made.
    var pendingChecks = 0

    /// How soon after a stream starts a change to it is the server applying its memory (WirePlumber
    /// does it a moment after the stream appears), not the user (`server-restore-window`).
    let serverRestoreWindow: Duration
    /// How long after the last change to a stream we changed the memory is written again where no
    /// event says it was saved (pipewire-pulse: WirePlumber saves a stream's volume on its own time;
    /// `memory-settle`).
    let memorySettleDelay: Duration

    /// `bounds`: voiceboxd's (memory-check-first, server-restore-window and memory-settle are read;
    /// the players bound their own calls; grace and call-limit come in `settings`).
    public init(mixer: any AudioMixer, players: any MediaPlayers, journal: any JournalStore, bus: any ServiceBus,
                settings: AudioSessionSettings = .init(), bounds: Bounds = Bounds(), ownProcessID: Int32,
                clock: any SessionClock = SystemSessionClock(), log: (@Sendable (String) -> Void)? = nil) {
        let log = log ?? { _ in }
        self.mixer = mixer
        self.players = players
        self.bus = bus
        self.settings = settings
        self.kinds = StreamKinds(settings: settings, ownProcessID: ownProcessID)
        self.clock = clock
        pendingCheckDelays = Self.pendingCheckMultiples.map { bounds[.memoryCheckFirst] * $0 }
        serverRestoreWindow = bounds[.serverRestoreWindow]
        memorySettleDelay = bounds[.memorySettle]
        self.log = log
        self.journal = JournalKeeper(store: journal, log: log)
        (inputs, inputSink) = AsyncStream.makeStream(of: Input.self)
    }

    /// Who is held while a call has the audio.
    public func add(_ target: any InterruptionTarget) {
        targets.append(target)
    }

    public var isInterrupted: Bool { interrupted }

    /// Publishes Interrupted and takes over a journal a crash left behind (undone once the sound
    /// server is reached, which `run` follows). Call before taking the bus name.
    public func start() {
        bus.publish(Speech1.interrupted, false)
        if let left = journal.store.load(), !left.isEmpty { leftover = left }
    }

    /// Handles every input until the mixer's events end. Start it once the bus name is ours: the
    /// `ended` of a recovered interruption goes out from here, and a monitor watching the name
    /// must see it.
    public func run() async {
        let forwarding = Task { [mixer, inputSink] in
            for await event in mixer.events { inputSink.yield(.mixer(event)) }
            inputSink.finish()
        }
        for await input in inputs { await handle(input) }
        forwarding.cancel()
    }

    /// The service is stopping: others get back at once what this interruption took, a call's
    /// interruption is declared over (`ended`, should_resume false: Voicebox will not go on), and
    /// both `ended` go out before this returns.
    public func finish() async {
        await withCheckedContinuation { done in
            if case .terminated = inputSink.yield(.finish(done)) { done.resume() }
        }
    }

    /// Returns once everything sent before has been handled (tests; shutdown).
    public func drain() async {
        await withCheckedContinuation { done in
            if case .terminated = inputSink.yield(.drain(done)) { done.resume() }
        }
    }

    // MARK: Voicebox interrupting others

    /// Voicebox starts speaking or listening (`id`), doing `policy` to others; returns once they are
    /// paused, muted or lowered.
    public func begin(_ reason: InterruptionReason, id: UInt64, policy: OthersPolicy) async {
        await withCheckedContinuation { done in
            if case .terminated = inputSink.yield(.begin(Activity(reason: reason, id: id), policy, done)) { done.resume() }
        }
    }

    /// The activity is over; others are restored `grace` after the last one ends (and only once no
    /// call has the audio).
    public func end(_ reason: InterruptionReason, id: UInt64) {
        inputSink.yield(.end(Activity(reason: reason, id: id)))
    }

    // MARK: Handling

    private func handle(_ input: Input) async {
        switch input {
        case .begin(let activity, let policy, let done):
            if !finished {
                cancelRestore()
                activities[activity] = policy
                if policy > .mix { await interruptOthers(activity, policy: policy) }
            }
            done.resume()
        case .end(let activity):
            guard activities.removeValue(forKey: activity) != nil else { return }
            scheduleRestore()
        case .restoreDue(let generation):
            guard generation == restoreGeneration else { return }
            await restoreIfDue()
        case .memoryDue(let generation):
            guard generation == memoryGeneration else { return }
            await writeMemoryBack()
        case .pendingCheckDue(let generation):
            guard generation == pendingCheckGeneration else { return }
            await checkPendingMemory()
        case .mixer(let event):
            await handle(event)
        case .finish(let done):
            await shutDown()
            done.resume()
        case .drain(let done):
            done.resume()
        }
    }

    /// Speaking or listening that asks something of others is under way.
    var othersAreWanted: Bool { activities.values.contains { $0 > .mix } }

    /// Others come back `grace` from now, if nothing wants them interrupted then.
    func scheduleRestore() {
        guard others != nil, !othersAreWanted, !finished else { return }
        cancelRestore()
        let generation = restoreGeneration
        restoreTimer = clock.schedule(after: settings.grace) { [inputSink] in inputSink.yield(.restoreDue(generation)) }
    }

    func cancelRestore() {
        restoreGeneration += 1
        restoreTimer?.cancel()
        restoreTimer = nil
    }

    /// Others get their audio back: nothing of ours wants them interrupted, and no call holds them.
    private func restoreIfDue() async {
        guard others != nil, !othersAreWanted, calls.isEmpty else { return }
        await restoreOthers()
    }

    private func shutDown() async {
        finished = true
        cancelRestore()
        memoryTimer?.cancel()
        pendingCheckTimer?.cancel()
        pendingCheckGeneration += 1
        activities.removeAll()
        await checkPendingMemory(last: true)
        await restoreOthers()
        if callAnnounced {
            callAnnounced = false
            calls = []
            updateInterrupted()
            bus.emit(Speech1.audioInterruption, .ended, InterruptionInfo(reason: .external, id: 0, shouldResume: false))
        }
    }

    /// Publishes Interrupted when it changes.
    func updateInterrupted() {
        let now = others != nil || !calls.isEmpty
        guard now != interrupted else { return }
        interrupted = now
        bus.publish(Speech1.interrupted, now)
    }
}

/// Voicebox's own work that a call holds: speech and microphone recognition.
public protocol InterruptionTarget: Sendable {
    func externalInterruptionBegan() async
    func externalInterruptionEnded() async
}
