/// The audio session: what Voicebox does to other audio while it speaks or listens, and what
/// it does when something more important (a call) takes the audio. Like AVAudioSession, every
/// begin and end is announced (AudioInterruption) and shown (property Interrupted).
///
/// Voicebox interrupting others: `begin` when an utterance is queued or a microphone opens,
/// `end` when it is over. Overlapping and back-to-back activities (within `grace`) make one
/// interruption. What is changed is written to the journal first and restored exactly:
/// a stream the user unmuted or moved meanwhile keeps the user's setting. A change that cannot
/// be written down (a full `$XDG_RUNTIME_DIR`) is not made: a crash would leave it for good.
///
/// Others interrupting Voicebox: a playing or recording stream with a call role (phone,
/// Communication) holds the targets (speech pauses, the microphone is corked) until it ends.
/// Detection follows the mixer's events; nothing is polled.
public actor AudioSession {
    private struct Activity: Hashable {
        let reason: InterruptionReason
        let id: UInt64
    }

    private let mixer: any AudioMixer
    private let players: any MediaPlayers
    private let journal: any JournalStore
    private let bus: any ServiceBus
    public nonisolated let settings: AudioSessionSettings
    private let ownProcessID: Int32
    private var targets: [any InterruptionTarget] = []

    private var activities: [Activity: OthersPolicy] = [:]
    /// What this interruption did to others; nil while none is in progress.
    private var changes: Changes?
    private var ending: Task<Void, Never>?
    /// The streams as last reported, by index.
    private var streams: [UInt32: PlaybackStream] = [:]
    private var calls: Set<String> = []
    private var interrupted = false
    /// The last change to others under way: each waits for the one before, so that no two run
    /// interleaved at their awaits (a pause joining while a restore was undoing, a newcomer muted
    /// while a pause was recording) and lose each other's record.
    private var tail: Task<Void, Never>?
    /// What a voiceboxd that died mid-interruption left changed: kept in the journal beside what
    /// this one changes, until it is undone.
    private var leftover: InterruptionJournal?
    /// What this interruption had muted or ducked when the server went away, by application and
    /// role (see `undoWhatTheServerRemembered`).
    private var lostChanges: [LostChange] = []
    /// When each stream was first seen: only a stream that comes up so counts as the server's
    /// memory of a lost change (see `rememberLostChanges`).
    private var firstSeen: [UInt32: ContinuousClock.Instant] = [:]
    /// Where a journal that cannot be written is reported (the daemon's log).
    private let log: (@Sendable (String) -> Void)?
    /// Whether the last journal write failed: reported once per spell, not per change.
    private var journalFailing = false

    public init(mixer: any AudioMixer, players: any MediaPlayers, journal: any JournalStore, bus: any ServiceBus,
                settings: AudioSessionSettings = .init(), ownProcessID: Int32, log: (@Sendable (String) -> Void)? = nil) {
        self.log = log
        self.mixer = mixer
        self.players = players
        self.journal = journal
        self.bus = bus
        self.settings = settings
        self.ownProcessID = ownProcessID
    }

    /// Who is held while a call has the audio.
    public func add(_ target: any InterruptionTarget) {
        targets.append(target)
    }

    public var isInterrupted: Bool { interrupted }

    /// Publishes Interrupted and takes over a journal a crash left behind (undone once the sound
    /// server is reached). Call before taking the bus name.
    public func start() {
        bus.publish(.interrupted(false))
        if let left = journal.load(), !left.isEmpty { leftover = left }
    }

    /// Runs `work` after every change to others started before it, and waits for it.
    private func inTurn(_ work: @escaping @Sendable (isolated AudioSession) async -> Void) async {
        let previous = tail
        let turn = Task {
            await previous?.value
            await work(self)
        }
        tail = turn
        await turn.value
    }

    /// Follows the server until the mixer's events end; on each (re)connection it first restores
    /// what a previous voiceboxd left changed.
    public func run() async {
        for await event in mixer.events {
            await handle(event)
        }
    }

    /// The service is stopping: others get back at once what this interruption took.
    public func finish() async {
        ending?.cancel()
        activities.removeAll()
        await inTurn { await $0.restoreNow() }
    }

    // MARK: Voicebox interrupting others

    /// Voicebox starts speaking or listening (`id`), doing `policy` to others.
    public func begin(_ reason: InterruptionReason, id: UInt64, policy: OthersPolicy) async {
        ending?.cancel()
        ending = nil
        activities[Activity(reason: reason, id: id)] = policy
        guard policy > .mix else { return }
        await inTurn { await $0.interrupt(reason, id: id, policy: policy) }
    }

    private func interrupt(_ reason: InterruptionReason, id: UInt64, policy: OthersPolicy) async {
        // Ended meanwhile (a very short utterance whose end came in before its turn): nothing to do.
        guard activities[Activity(reason: reason, id: id)] != nil else { return }
        if var current = changes {
            guard policy > current.policy else { return }
            // A stronger policy joins the interruption in progress (a dictation during a ducked reply).
            current.policy = policy
            changes = current
            await apply(policy)
            return
        }
        changes = Changes(reason: reason, id: id, policy: policy)
        await apply(policy)
        updateInterrupted()
        if let changes { bus.emit(.audioInterruption(.began, changes.info(shouldResume: nil))) }
    }

    /// The activity is over; others are restored `grace` after the last one ends.
    public func end(_ reason: InterruptionReason, id: UInt64) {
        guard activities.removeValue(forKey: Activity(reason: reason, id: id)) != nil else { return }
        guard changes != nil, !activities.values.contains(where: { $0 > .mix }) else { return }
        ending?.cancel()
        let grace = settings.grace
        ending = Task {
            try? await Task.sleep(for: grace)
            guard !Task.isCancelled else { return }
            await self.inTurn { await $0.restoreNow() }
        }
    }

    private func restoreNow() async {
        guard let done = changes, !activities.values.contains(where: { $0 > .mix }) else { return }
        ending = nil
        await restore(done)
        changes = nil
        writeJournal()
        updateInterrupted()
        bus.emit(.audioInterruption(.ended, done.info(shouldResume: true)))
    }

    /// Pauses players and silences streams (`pause`), or lowers streams (`duck`).
    private func apply(_ policy: OthersPolicy) async {
        guard var current = changes else { return }
        var paused: [MediaPlayer] = []
        if policy == .pause {
            var playing = await players.playing().filter { player in !current.players.contains(player) }
            current.players += playing
            if !record(current) {
                current.players.removeAll { playing.contains($0) }
                playing = []
            }
            paused = await withTaskGroup(of: MediaPlayer?.self) { group in
                for player in playing { group.addTask { await self.players.pause(player) ? player : nil } }
                var done: [MediaPlayer] = []
                for await player in group { if let player { done.append(player) } }
                return done
            }
            current.players = current.players.filter { !playing.contains($0) || paused.contains($0) }
        }
        let info = try? await mixer.serverInfo()
        let list = (try? await mixer.playbackStreams()) ?? []
        for stream in list { streams[stream.id] = stream }
        let playerProcesses = Set(current.players.compactMap(\.processID))
        let candidates = list.filter { isOthers($0) && !$0.corked && !playerProcesses.contains($0.processID ?? -1) }
        switch policy {
        case .pause:
            var toMute = candidates.filter { !$0.muted && !current.isMuted($0.id) }
            if let info, info.hasRoleCork, !info.isPipeWire, current.trigger == nil,
               let role = info.roleCorkTriggers.first {
                // The server corks these itself and asks their clients to pause: those that obey do.
                let targets = Set(info.roleCorkTargets.map { $0.lowercased() })
                let corkable = toMute.filter { targets.contains($0.role?.lowercased() ?? "") }
                if !corkable.isEmpty, let trigger = try? await mixer.startCorkTrigger(role: role) {
                    current.trigger = trigger
                    // The module acts when the trigger appears, and only on the trigger's sink unless it
                    // was loaded global: what it did not silence is muted here like the rest.
                    let after = Dictionary(((try? await mixer.playbackStreams()) ?? []).map { ($0.id, $0) },
                                           uniquingKeysWith: { a, _ in a })
                    let corked = corkable.filter { after[$0.id].map { $0.corked || $0.muted } ?? false }
                    current.corked += UInt32(corked.count)
                    toMute.removeAll { corked.contains($0) }
                }
            }
            current.muted += toMute.map(InterruptionJournal.Stream.init(muting:))
            if !record(current) {
                current.muted.removeAll { muted in toMute.contains { $0.id == muted.id } }
                toMute = []
            }
            for stream in toMute {
                if (try? await mixer.setMute(stream.id, true)) == nil { current.muted.removeAll { $0.id == stream.id } }
            }
        case .duck:
            var toDuck = candidates.filter { !current.isDucked($0.id) && !current.isMuted($0.id) }
            let factor = settings.duckFactor
            current.ducked += toDuck.map { InterruptionJournal.Stream(ducking: $0, by: factor) }
            if !record(current) {
                current.ducked.removeAll { ducked in toDuck.contains { $0.id == ducked.id } }
                toDuck = []
            }
            for stream in toDuck {
                let lowered = InterruptionJournal.Stream(ducking: stream, by: factor).ourVolume ?? stream.volume
                if (try? await mixer.setVolume(stream.id, lowered)) == nil { current.ducked.removeAll { $0.id == stream.id } }
            }
        case .mix:
            break
        }
        current.pausedPlayerNames = current.players.map(\.name)
        changes = current
        record(current)
    }

    /// Undoes exactly what was done and what the user has not changed since.
    private func restore(_ done: Changes) async {
        let now = (try? await mixer.playbackStreams()) ?? Array(streams.values)
        let current = Dictionary(now.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        for muted in done.muted {
            // Still muted: ours to undo. Unmuted: the user did it, and keeps it.
            guard let stream = current[muted.id], muted.matches(stream), stream.muted else { continue }
            try? await mixer.setMute(muted.id, false)
        }
        for ducked in done.ducked {
            guard let stream = current[ducked.id], ducked.matches(stream), stream.volume == ducked.ourVolume,
                  let original = ducked.originalVolume else { continue }
            try? await mixer.setVolume(ducked.id, original)
        }
        if done.trigger != nil { await mixer.stopCorkTrigger() }
        await withTaskGroup(of: Void.self) { group in
            for player in done.players { group.addTask { _ = await self.players.resumeIfStillPaused(player) } }
        }
    }

    /// Written before the change it describes. False when it could not be written: the caller then
    /// takes the change back out and does not make it.
    @discardableResult
    private func record(_ changes: Changes) -> Bool {
        self.changes = changes
        return writeJournal()
    }

    /// The journal as it stands: what this interruption changed and what a crash left, or nothing.
    /// False when it cannot be saved (a full runtime directory).
    @discardableResult
    private func writeJournal() -> Bool {
        var entry = leftover ?? InterruptionJournal()
        if let changes {
            entry.muted += changes.muted
            entry.ducked += changes.ducked
            entry.players += changes.players
        }
        guard !entry.isEmpty else {
            journal.clear()
            journalFailing = false
            return true
        }
        do {
            try journal.save(entry)
            journalFailing = false
            return true
        } catch {
            if !journalFailing {
                log?("cannot write the interruption journal (\(error)): other audio is left as it is until it can be written")
            }
            journalFailing = true
            return false
        }
    }

    /// Not Voicebox's own, not speech-dispatcher's, not a call.
    private func isOthers(_ stream: PlaybackStream) -> Bool {
        if stream.processID == ownProcessID { return false }
        if let name = stream.applicationName?.lowercased(), name.hasPrefix("speech-dispatcher") { return false }
        if let media = stream.mediaName?.lowercased(), media.hasPrefix("speech-dispatcher") { return false }
        if let role = stream.role?.lowercased(), settings.spareRoles.contains(role) { return false }
        return !isCall(stream.role)
    }

    private func isCall(_ role: String?) -> Bool {
        guard let role else { return false }
        return settings.callRoles.contains(role.lowercased())
    }

    // MARK: The server's events

    private func handle(_ event: MixerEvent) async {
        switch event {
        case .serverReady:
            streams = Dictionary(((try? await mixer.playbackStreams()) ?? []).map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            let now = ContinuousClock.now
            firstSeen = Dictionary(streams.keys.map { ($0, now) }, uniquingKeysWith: { a, _ in a })
            for stream in streams.values {
                if let change = takeRemembered(stream) { await inTurn { await $0.setBack(change, on: stream) } }
            }
            await inTurn { await $0.recoverFromJournal() }
            var active: Set<String> = []
            for stream in streams.values where isCallActive(stream) { active.insert("p\(stream.id)") }
            for recording in (try? await mixer.recordingStreams()) ?? [] where isCallActive(recording) { active.insert("r\(recording.id)") }
            await setCalls(active)
        case .serverLost:
            rememberLostChanges()
            streams = [:]
            firstSeen = [:]
            await setCalls([])
        case .playbackChanged(let stream):
            let isNew = streams[stream.id] == nil
            // A stream that starts corked and begins to play a moment later (pipewire-pulse reports a
            // new paplay stream so) starts playing now: a newcomer too.
            let startsPlaying = isNew || (streams[stream.id]?.corked == true && !stream.corked)
            streams[stream.id] = stream
            if isNew { firstSeen[stream.id] = .now }
            await updateCall("p\(stream.id)", isCallActive(stream))
            if let change = takeRemembered(stream) {
                await inTurn { await $0.setBack(change, on: stream) }
            } else if startsPlaying, changes != nil {
                await inTurn { await $0.interruptNewcomer(stream) }
            }
        case .playbackRemoved(let id):
            streams[id] = nil
            firstSeen[id] = nil
            await updateCall("p\(id)", false)
        case .recordingChanged(let recording):
            await updateCall("r\(recording.id)", isCallActive(recording))
        case .recordingRemoved(let id):
            await updateCall("r\(id)", false)
        }
    }

    private func isCallActive(_ stream: PlaybackStream) -> Bool {
        isCall(stream.role) && !stream.corked && stream.processID != ownProcessID
    }

    private func isCallActive(_ recording: RecordingStream) -> Bool {
        isCall(recording.role) && !recording.corked && recording.processID != ownProcessID
    }

    /// A stream that starts while others are interrupted is treated as they were.
    private func interruptNewcomer(_ stream: PlaybackStream) async {
        // (Already ours: its first event can come after the interruption that changed it began.)
        guard var current = changes, isOthers(stream), !stream.corked, !current.isMuted(stream.id),
              !current.isDucked(stream.id) else { return }
        if current.players.contains(where: { $0.processID != nil && $0.processID == stream.processID }) { return }
        switch current.policy {
        case .pause where !stream.muted:
            current.muted.append(.init(muting: stream))
            guard record(current) else {
                current.muted.removeLast()
                changes = current
                return
            }
            try? await mixer.setMute(stream.id, true)
        case .duck:
            let entry = InterruptionJournal.Stream(ducking: stream, by: settings.duckFactor)
            current.ducked.append(entry)
            guard record(current) else {
                current.ducked.removeLast()
                changes = current
                return
            }
            try? await mixer.setVolume(stream.id, entry.ourVolume ?? stream.volume)
        default:
            break
        }
    }

    // MARK: The server restarting mid-interruption

    /// The server went away with streams muted or ducked: they are gone, and nothing is left to
    /// restore on it. But PulseAudio's module-stream-restore and WirePlumber's restore-stream
    /// remember a stream's mute and volume by application or role, and give them to the next
    /// stream of the same kind (measured on pipewire-pulse 0.3.65: music played after the restart
    /// came up muted). What was changed is kept by application and role, so that such a stream is
    /// set back once, if it shows it within `lostChangesWindow` of its start (the server applies its
    /// memory as the stream starts, or a moment after: WirePlumber does it in a second step); a mute
    /// that comes later is the user's. (Kept in memory only: a voiceboxd that exits before such a
    /// stream plays again leaves the server's memory as it is.)
    private static let lostChangesWindow: Duration = .seconds(2)

    private func rememberLostChanges() {
        guard var current = changes else { return }
        for entry in current.muted {
            lostChanges.append(LostChange(applicationName: entry.applicationName, role: streams[entry.id]?.role))
        }
        for entry in current.ducked {
            lostChanges.append(LostChange(applicationName: entry.applicationName, role: streams[entry.id]?.role,
                                          originalVolume: entry.originalVolume, ourVolume: entry.ourVolume))
        }
        current.muted.removeAll()
        current.ducked.removeAll()
        record(current)
    }

    /// The lost change this stream shows (its application and role, muted or at our lowered
    /// volume), taken off the list; nil if none.
    private func takeRemembered(_ stream: PlaybackStream) -> LostChange? {
        guard !lostChanges.isEmpty, let seen = firstSeen[stream.id], ContinuousClock.now - seen < Self.lostChangesWindow,
              let index = lostChanges.firstIndex(where: { $0.matches(stream) && $0.isShown(by: stream) }) else { return nil }
        return lostChanges.remove(at: index)
    }

    /// Sets back what the server remembered of our change, unless an interruption in progress
    /// wants it so (then it is recorded as ours, and restored at the end).
    private func setBack(_ change: LostChange, on stream: PlaybackStream) async {
        if var current = changes, isOthers(stream) {
            if change.ourVolume == nil, current.policy == .pause {
                current.muted.append(.init(muting: stream))
                record(current)
                return
            }
            if let original = change.originalVolume, current.policy == .duck {
                current.ducked.append(.init(id: stream.id, processID: stream.processID, applicationName: stream.applicationName,
                                            originalVolume: original, ourVolume: stream.volume))
                record(current)
                return
            }
        }
        if let original = change.originalVolume {
            try? await mixer.setVolume(stream.id, original)
        } else {
            try? await mixer.setMute(stream.id, false)
        }
        await interruptNewcomerIfInterrupted(stream)
    }

    private func interruptNewcomerIfInterrupted(_ stream: PlaybackStream) async {
        guard let current = changes, !current.isMuted(stream.id), !current.isDucked(stream.id) else { return }
        // As it is now (unmuted, or back at its volume), not as it came.
        let now = ((try? await mixer.playbackStreams()) ?? []).first { $0.id == stream.id } ?? stream
        await interruptNewcomer(now)
    }

    // MARK: Others interrupting Voicebox

    private func updateCall(_ key: String, _ active: Bool) async {
        var next = calls
        if active { next.insert(key) } else { next.remove(key) }
        await setCalls(next)
    }

    private func setCalls(_ next: Set<String>) async {
        let was = !calls.isEmpty, now = !next.isEmpty
        calls = next
        guard was != now else { return }
        if now {
            updateInterrupted()
            bus.emit(.audioInterruption(.began, InterruptionInfo(reason: .external, id: 0)))
            for target in targets { await target.externalInterruptionBegan() }
        } else {
            for target in targets { await target.externalInterruptionEnded() }
            updateInterrupted()
            bus.emit(.audioInterruption(.ended, InterruptionInfo(reason: .external, id: 0, shouldResume: true)))
        }
    }

    private func updateInterrupted() {
        let now = changes != nil || !calls.isEmpty
        guard now != interrupted else { return }
        interrupted = now
        bus.publish(.interrupted(now))
    }

    // MARK: Crash recovery

    /// What a voiceboxd that died mid-interruption left changed, undone as `restore` would.
    private func recoverFromJournal() async {
        guard let left = leftover else { return }
        var undo = Changes(reason: .speaking, id: 0, policy: .pause)
        undo.muted = left.muted
        undo.ducked = left.ducked
        undo.players = left.players
        await restore(undo)
        leftover = nil
        writeJournal()
    }
}

/// A change to a stream that the server took with it when it went away.
private struct LostChange {
    var applicationName: String?
    var role: String?
    /// Ducked: the volume before and ours. Muted: both nil.
    var originalVolume: [UInt32]?
    var ourVolume: [UInt32]?

    func matches(_ stream: PlaybackStream) -> Bool {
        stream.applicationName == applicationName && stream.role?.lowercased() == role?.lowercased()
    }

    /// The stream is as we left its kind: muted, or at our lowered volume.
    func isShown(by stream: PlaybackStream) -> Bool {
        ourVolume.map { stream.volume == $0 } ?? stream.muted
    }
}

/// What one interruption did to others.
private struct Changes {
    let reason: InterruptionReason
    let id: UInt64
    var policy: OthersPolicy
    var players: [MediaPlayer] = []
    var pausedPlayerNames: [String] = []
    var muted: [InterruptionJournal.Stream] = []
    var ducked: [InterruptionJournal.Stream] = []
    var corked: UInt32 = 0
    var trigger: UInt32?

    init(reason: InterruptionReason, id: UInt64, policy: OthersPolicy) {
        self.reason = reason
        self.id = id
        self.policy = policy
    }

    func isMuted(_ id: UInt32) -> Bool { muted.contains { $0.id == id } }
    func isDucked(_ id: UInt32) -> Bool { ducked.contains { $0.id == id } }

    func info(shouldResume: Bool?) -> InterruptionInfo {
        InterruptionInfo(reason: reason, id: id, shouldResume: shouldResume, pausedPlayers: players.map(\.name),
                         mutedStreams: UInt32(muted.count), duckedStreams: UInt32(ducked.count), corkedStreams: corked)
    }
}

extension InterruptionJournal.Stream {
    init(muting stream: PlaybackStream) {
        self.init(id: stream.id, processID: stream.processID, applicationName: stream.applicationName)
    }

    init(ducking stream: PlaybackStream, by factor: Double) {
        self.init(id: stream.id, processID: stream.processID, applicationName: stream.applicationName,
                  originalVolume: stream.volume,
                  ourVolume: stream.volume.map { UInt32((Double($0) * factor).rounded()) })
    }
}

/// Voicebox's own work that a call holds: speech and microphone recognition.
public protocol InterruptionTarget: Sendable {
    func externalInterruptionBegan() async
    func externalInterruptionEnded() async
}
