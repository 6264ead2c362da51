import VoiceboxCore
import VoiceboxLock

/// A sound server in memory: streams a test sets up, changes recorded, events on demand.
final class ScriptedMixer: AudioMixer {
    let events: AsyncStream<MixerEvent>
    private let feed: AsyncStream<MixerEvent>.Continuation
    private let state: Locked<State>
    /// Checked at each change: the journal must already say what is about to change.
    let journal: MemoryJournal

    struct State {
        var info: SoundServerInfo
        var playback: [UInt32: PlaybackStream] = [:]
        var recording: [UInt32: RecordingStream] = [:]
        var changes: [String] = []
        var trigger: UInt32?
        var unjournaled: [String] = []
        var elsewhere: Set<UInt32> = []
    }

    init(info: SoundServerInfo = .init(name: "pulseaudio", version: "16.1", isPipeWire: false), journal: MemoryJournal) {
        (events, feed) = AsyncStream.makeStream()
        state = Locked(State(info: info))
        self.journal = journal
    }

    var changes: [String] { state.withLock { $0.changes } }
    var unjournaled: [String] { state.withLock { $0.unjournaled } }
    var trigger: UInt32? { state.withLock { $0.trigger } }
    func stream(_ id: UInt32) -> PlaybackStream? { state.withLock { $0.playback[id] } }

    /// A stream appears (or changes) on the server; the event is sent.
    func play(_ stream: PlaybackStream) {
        state.withLock { $0.playback[stream.id] = stream }
        feed.yield(.playbackChanged(stream))
    }

    func remove(_ id: UInt32) {
        state.withLock { $0.playback[id] = nil }
        feed.yield(.playbackRemoved(id))
    }

    func record(_ stream: RecordingStream) {
        state.withLock { $0.recording[stream.id] = stream }
        feed.yield(.recordingChanged(stream))
    }

    /// The user moves a stream's volume or mute with a mixer.
    func userSets(_ id: UInt32, muted: Bool? = nil, volume: [UInt32]? = nil) {
        let changed: PlaybackStream? = state.withLock { state in
            guard var stream = state.playback[id] else { return nil }
            if let muted { stream.muted = muted }
            if let volume { stream.volume = volume }
            state.playback[id] = stream
            return stream
        }
        if let changed { feed.yield(.playbackChanged(changed)) }
    }

    func ready() { feed.yield(.serverReady) }

    /// The server dies: its streams go with it.
    func lost() {
        state.withLock { $0.playback = [:] }
        feed.yield(.serverLost(reason: "killed"))
    }

    func serverInfo() async throws -> SoundServerInfo { state.withLock { $0.info } }
    func playbackStreams() async throws -> [PlaybackStream] { state.withLock { $0.playback.values.sorted { $0.id < $1.id } } }
    func recordingStreams() async throws -> [RecordingStream] { state.withLock { $0.recording.values.sorted { $0.id < $1.id } } }

    func setMute(_ id: UInt32, _ muted: Bool) async throws {
        let journaled = muted ? journal.current?.muted.contains { $0.id == id } ?? false : true
        let changed: PlaybackStream? = try state.withLock { state throws(MixerError) in
            guard var stream = state.playback[id] else { throw MixerError.noSuchStream(id) }
            stream.muted = muted
            state.playback[id] = stream
            state.changes.append("mute \(id) \(muted)")
            if !journaled { state.unjournaled.append("mute \(id)") }
            return stream
        }
        if let changed { feed.yield(.playbackChanged(changed)) }
    }

    func setVolume(_ id: UInt32, _ volume: [UInt32]) async throws {
        let changed: PlaybackStream? = try state.withLock { state throws(MixerError) in
            guard var stream = state.playback[id] else { throw MixerError.noSuchStream(id) }
            stream.volume = volume
            state.playback[id] = stream
            state.changes.append("volume \(id) \(volume)")
            return stream
        }
        if let changed { feed.yield(.playbackChanged(changed)) }
    }

    /// Streams module-role-cork leaves alone (on another sink than the trigger's).
    func onAnotherSink(_ id: UInt32) { state.withLock { _ = $0.elsewhere.insert(id) } }

    /// As the module does: streams of its target roles on the trigger's sink are muted and corked
    /// while the trigger plays.
    func startCorkTrigger(role: String) async throws -> UInt32 {
        state.withLock { state in
            state.trigger = 999
            state.changes.append("trigger \(role)")
            for (id, stream) in state.playback where state.info.roleCorkTargets.contains(stream.role ?? "") && !state.elsewhere.contains(id) {
                state.playback[id]?.corked = true
                state.playback[id]?.muted = true
            }
            return 999
        }
    }

    func stopCorkTrigger() async {
        state.withLock { state in
            state.trigger = nil
            state.changes.append("trigger off")
            for (id, stream) in state.playback where state.info.roleCorkTargets.contains(stream.role ?? "") && !state.elsewhere.contains(id) {
                state.playback[id]?.corked = false
                state.playback[id]?.muted = false
            }
        }
    }
}

struct DiskFull: Error {}

final class MemoryJournal: JournalStore {
    private let stored = Locked<InterruptionJournal?>(nil)
    /// Set: every save fails, as on a full disk.
    let full = Locked(false)
    var current: InterruptionJournal? { stored.withLock { $0 } }
    func save(_ journal: InterruptionJournal) throws {
        if full.withLock({ $0 }) { throw DiskFull() }
        stored.withLock { $0 = journal }
    }
    func load() -> InterruptionJournal? { current }
    func clear() { stored.withLock { $0 = nil } }
}

/// MPRIS players in memory: names, owners and statuses a test sets.
final class ScriptedPlayers: MediaPlayers {
    private let state = Locked<(players: [String: (owner: String, status: String, pid: Int32)], calls: [String])>(([:], []))

    func add(_ name: String, owner: String, status: String = "Playing", pid: Int32) {
        state.withLock { $0.players[name] = (owner, status, pid) }
    }

    func set(_ name: String, status: String? = nil, owner: String? = nil) {
        state.withLock { state in
            if let status { state.players[name]?.status = status }
            if let owner { state.players[name]?.owner = owner }
        }
    }

    func status(_ name: String) -> String? { state.withLock { $0.players[name]?.status } }
    var calls: [String] { state.withLock { $0.calls } }

    func playing() async -> [MediaPlayer] {
        state.withLock { state in
            state.players.filter { $0.value.status == "Playing" }
                .map { MediaPlayer(name: $0.key, owner: $0.value.owner, processID: $0.value.pid) }.sorted { $0.name < $1.name }
        }
    }

    func pause(_ player: MediaPlayer) async -> Bool {
        state.withLock { state in
            state.calls.append("pause \(player.name)")
            state.players[player.name]?.status = "Paused"
            return true
        }
    }

    func resumeIfStillPaused(_ player: MediaPlayer) async -> Bool {
        state.withLock { state in
            guard let now = state.players[player.name], now.owner == player.owner, now.status == "Paused" else { return false }
            state.calls.append("play \(player.name)")
            state.players[player.name]?.status = "Playing"
            return true
        }
    }
}

/// Records what a call did to Voicebox's own work.
final class RecordingTarget: InterruptionTarget {
    private let log = Locked<[String]>([])
    var events: [String] { log.withLock { $0 } }
    func externalInterruptionBegan() async { log.withLock { $0.append("began") } }
    func externalInterruptionEnded() async { log.withLock { $0.append("ended") } }
}
