@testable import TestSupport
import Foundation
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads

/// A sound server in memory: streams a test sets up, changes recorded, events on demand, and a
/// memory of stream settings that behaves as the real servers' (measured; see ServerMemory):
/// - `.readWrite` (PulseAudio's module-stream-restore): a new stream starts from its entry (one is
///   made, blank, for a stream that has none); a client's mute or volume change is saved, and so is
///   every later change of a stream a client changed; each save is reported.
/// - `.writeOnly` (WirePlumber's restore-stream behind pipewire-pulse): every change of a stream is
///   saved, silently; a new stream gets its entry a moment after it appears (`applyMemory`), or
///   at once (`memoryAtStart`); a read is refused.
final class ScriptedMixer: AudioMixer, @unchecked Sendable {
    // (@unchecked: every var is behind `state`; the event feed is an AsyncStream continuation.)
    /// Each request for the next event is counted: the session forwards an event before it asks
    /// for the next one, so once it asks for more than were sent, it has them all.
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
        var memory: [String: RememberedSetting] = [:]
        /// Streams a client changed (PulseAudio saves them again at each change).
        var saving: Set<UInt32> = []
        var memoryAtStart = true
        /// Streams WirePlumber has not taken up yet: it saves a stream only once it applied its memory to it.
        var unrestored: Set<UInt32> = []
        var failing: Set<String> = []
        /// pipewire-pulse with WirePlumber behind: writes wait here, unlisted, until `catchUp`.
        var behind = false
        var late: [RememberedSetting] = []
        /// The server is away: every request fails.
        var down = false
        /// Events sent, and events the reader has taken.
        var sent = 0
        var taken = 0
    }

    init(info: SoundServerInfo = .init(name: "pulseaudio", version: "16.1", isPipeWire: false), journal: MemoryJournal) {
        let (raw, feed) = AsyncStream.makeStream(of: MixerEvent.self)
        let state = Locked(State(info: info))
        let reader = EventReader(raw.makeAsyncIterator())
        events = AsyncStream(unfolding: {
            state.withLock { $0.taken += 1 }
            return await reader.next()
        })
        self.feed = feed
        self.state = state
        self.journal = journal
    }

    var changes: [String] { state.withLock { $0.changes } }
    var unjournaled: [String] { state.withLock { $0.unjournaled } }
    var trigger: UInt32? { state.withLock { $0.trigger } }
    func stream(_ id: UInt32) -> PlaybackStream? { state.withLock { $0.playback[id] } }
    var memory: [String: RememberedSetting] { state.withLock { $0.memory } }
    func setMemory(_ setting: RememberedSetting) { state.withLock { $0.memory[setting.name] = setting } }
    /// pipewire-pulse: WirePlumber applies its memory to a new stream a moment after it appears.
    func applyMemoryLate() { state.withLock { $0.memoryAtStart = false } }
    /// Requests named here ("mute", "volume", "remember") fail.
    func fail(_ request: String) { state.withLock { _ = $0.failing.insert(request) } }
    /// They work again.
    func stopFailing(_ request: String) { state.withLock { _ = $0.failing.remove(request) } }
    /// WirePlumber falls behind: what is written is not held (nor listed) until `catchUp()`, and
    /// `remember` gives up waiting for it, as the real one does after its bound.
    func fallBehind() { state.withLock { $0.behind = true } }
    /// WirePlumber catches up: what was written meanwhile is held; `losing`: it never arrives.
    func catchUp(losing: Bool = false) {
        state.withLock { state in
            state.behind = false
            if !losing { for setting in state.late { state.memory[setting.name] = setting } }
            state.late = []
        }
    }

    /// Every event sent so far has reached the session's input (its reader asked for the next one).
    var allTaken: Bool { state.withLock { $0.taken > $0.sent } }
    /// How many events were sent so far.
    var sentCount: Int { state.withLock { $0.sent } }

    private func send(_ event: MixerEvent) {
        state.withLock { $0.sent += 1 }
        feed.yield(event)
    }

    static func key(of stream: PlaybackStream) -> String? {
        if let key = stream.memoryKey { return key }
        if let role = stream.role { return "sink-input-by-media-role:" + role }
        if let name = stream.applicationName { return "sink-input-by-application-name:" + name }
        return nil
    }

    /// A stream appears (or changes) on the server; the event is sent. A new one starts from the
    /// server's memory of its application or role.
    func play(_ stream: PlaybackStream) {
        var stream = stream
        stream.memoryKey = Self.key(of: stream)
        let (shown, saved) = state.withLock { state -> (PlaybackStream, Bool) in
            if state.playback[stream.id] == nil, let key = stream.memoryKey, state.info.memory != .nothing {
                if let entry = state.memory[key], state.memoryAtStart { Self.apply(entry, to: &stream) }
                if !state.memoryAtStart { state.unrestored.insert(stream.id) }
                if state.info.memory == .readWrite, state.memory[key] == nil {
                    state.memory[key] = RememberedSetting(name: key)
                    state.playback[stream.id] = stream
                    return (stream, true)
                }
            }
            state.playback[stream.id] = stream
            return (stream, false)
        }
        send(.playbackChanged(shown))
        if saved { send(.rememberedChanged) }
    }

    /// WirePlumber's second step: the stream gets what its entry holds.
    func applyMemory(to id: UInt32) {
        let changed: PlaybackStream? = state.withLock { state in
            state.unrestored.remove(id)
            guard var stream = state.playback[id], let key = stream.memoryKey, let entry = state.memory[key] else { return nil }
            Self.apply(entry, to: &stream)
            state.playback[id] = stream
            return stream
        }
        if let changed { send(.playbackChanged(changed)) }
    }

    private static func apply(_ entry: RememberedSetting, to stream: inout PlaybackStream) {
        stream.muted = entry.muted
        if let volume = entry.volume, volume.count == stream.volume.count { stream.volume = volume }
    }

    func remove(_ id: UInt32) {
        state.withLock { $0.playback[id] = nil }
        send(.playbackRemoved(id))
    }

    func record(_ stream: RecordingStream) {
        state.withLock { $0.recording[stream.id] = stream }
        send(.recordingChanged(stream))
    }

    /// A client changes a stream (the user with a volume control, or the stream's own player):
    /// the server saves what the stream now is.
    func userSets(_ id: UInt32, muted: Bool? = nil, volume: [UInt32]? = nil, corked: Bool? = nil) {
        change(id, byClient: muted != nil || volume != nil) { stream in
            if let muted { stream.muted = muted }
            if let volume { stream.volume = volume }
            if let corked { stream.corked = corked }
        }
    }

    /// Changes a stream and saves it as the server would; sends the events.
    private func change(_ id: UInt32, byClient: Bool, log: String? = nil, _ body: (inout PlaybackStream) -> Void) {
        let (changed, saved): (PlaybackStream?, Bool) = state.withLock { state in
            guard var stream = state.playback[id] else { return (nil, false) }
            body(&stream)
            state.playback[id] = stream
            if let log { state.changes.append(log) }
            if byClient { state.saving.insert(id) }
            guard let key = stream.memoryKey else { return (stream, false) }
            switch state.info.memory {
            case .nothing: return (stream, false)
            case .writeOnly:
                guard !state.unrestored.contains(id) else { return (stream, false) }
                state.memory[key] = RememberedSetting(name: key, muted: stream.muted, volume: stream.volume, channelMap: stream.channelMap)
                return (stream, false)
            case .readWrite:
                guard state.saving.contains(id) else { return (stream, false) }
                state.memory[key] = RememberedSetting(name: key, muted: stream.muted, volume: stream.volume, channelMap: stream.channelMap)
                return (stream, true)
            }
        }
        if let changed { send(.playbackChanged(changed)) }
        if saved { send(.rememberedChanged) }
    }

    /// The server is (back) up, with `streams` already playing on it (each from its memory).
    func ready(with streams: [PlaybackStream] = []) {
        state.withLock { state in
            state.down = false
            for var stream in streams {
                stream.memoryKey = Self.key(of: stream)
                if let key = stream.memoryKey, let entry = state.memory[key], state.info.memory != .nothing { Self.apply(entry, to: &stream) }
                state.playback[stream.id] = stream
            }
        }
        send(.serverReady)
    }

    /// The server dies: its streams go with it (its memory stays).
    func lost() {
        state.withLock {
            $0.playback = [:]
            $0.saving = []
            $0.down = true
        }
        send(.serverLost(reason: "killed"))
    }

    func serverInfo() async throws -> SoundServerInfo {
        try check("info")
        return state.withLock { $0.info }
    }

    func playbackStreams() async throws -> [PlaybackStream] {
        try check("list")
        return state.withLock { $0.playback.values.sorted { $0.id < $1.id } }
    }

    func recordingStreams() async throws -> [RecordingStream] {
        try check("list")
        return state.withLock { $0.recording.values.sorted { $0.id < $1.id } }
    }

    private func check(_ request: String) throws {
        try state.withLock { state in
            if state.down { throw MixerError.unavailable("the server is away") }
            if state.failing.contains(request) { throw MixerError.failed("\(request) refused by the test") }
        }
    }

    func setMute(_ id: UInt32, _ muted: Bool) async throws {
        try check("mute")
        let journaled = muted ? journal.current?.muted.contains { $0.id == id } ?? false : true
        guard state.withLock({ $0.playback[id] }) != nil else { throw MixerError.noSuchStream(id) }
        if !journaled { state.withLock { $0.unjournaled.append("mute \(id)") } }
        change(id, byClient: true, log: "mute \(id) \(muted)") { $0.muted = muted }
    }

    func setVolume(_ id: UInt32, _ volume: [UInt32]) async throws {
        try check("volume")
        guard state.withLock({ $0.playback[id] }) != nil else { throw MixerError.noSuchStream(id) }
        change(id, byClient: true, log: "volume \(id) \(volume)") { $0.volume = volume }
    }

    /// libpulse's arithmetic: pa_sw_volume_from_dB (cubic) and pa_sw_volume_multiply.
    func attenuate(_ volume: [UInt32], byDecibels decibels: Double) -> [UInt32] {
        let factor = UInt64((cbrt(pow(10, decibels / 20)) * 65536).rounded())
        return volume.map { UInt32((UInt64($0) * factor + 32768) / 65536) }
    }

    func rememberedSettings() async throws -> [RememberedSetting] {
        try check("read")
        return try state.withLock { state in
            guard state.info.memory == .readWrite else { throw MixerError.unsupported("no memory to read") }
            return state.memory.values.sorted { $0.name < $1.name }
        }
    }

    func remember(_ settings: [RememberedSetting]) async throws {
        try check("remember")
        let notify = try state.withLock { state in
            guard state.info.memory != .nothing else { throw MixerError.unsupported("no memory") }
            if state.behind {
                state.late += settings
                state.changes.append("remember (late) " + settings.map(\.name).joined(separator: ","))
                throw MixerError.unavailable("the server did not list the stream memory it was given")
            }
            for setting in settings { state.memory[setting.name] = setting }
            state.changes.append("remember " + settings.map(\.name).joined(separator: ","))
            return state.info.memory == .readWrite
        }
        if notify { send(.rememberedChanged) }
    }

    func heldAsGiven(_ settings: [RememberedSetting]) async throws -> Set<String> {
        try check("read")
        return state.withLock { state in
            state.changes.append("asked " + settings.map(\.name).joined(separator: ","))
            return Set(settings.filter { state.memory[$0.name] == $0 }.map(\.name))
        }
    }

    func forgetRemembered(_ names: [String]) async throws {
        try check("forget")
        state.withLock { state in
            guard state.info.memory == .readWrite else { return }
            for name in names { state.memory[name] = nil }
            state.changes.append("forget " + names.joined(separator: ","))
        }
    }

    /// Streams module-role-cork leaves alone (on another sink than the trigger's).
    func onAnotherSink(_ id: UInt32) { state.withLock { _ = $0.elsewhere.insert(id) } }

    /// As the module does: streams of its target roles on the trigger's sink are muted and corked
    /// while the trigger plays (a mute the server does not save).
    func startCorkTrigger(role: String) async throws -> UInt32 {
        try check("trigger")
        let notify = state.withLock { state in
            state.trigger = 999
            state.changes.append("trigger \(role)")
            for (id, stream) in state.playback where state.info.roleCorkTargets.contains(stream.role ?? "") && !state.elsewhere.contains(id) {
                state.playback[id]?.corked = true
                state.playback[id]?.muted = true
            }
            let key = "sink-input-by-media-role:" + role
            guard state.info.memory == .readWrite, state.memory[key] == nil else { return false }
            state.memory[key] = RememberedSetting(name: key)
            return true
        }
        if notify { send(.rememberedChanged) }
        return 999
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

/// The one reader's iterator (@unchecked: only the session's forwarding task calls it, one call at a time).
private final class EventReader: @unchecked Sendable {
    private var iterator: AsyncStream<MixerEvent>.Iterator
    init(_ iterator: AsyncStream<MixerEvent>.Iterator) { self.iterator = iterator }
    func next() async -> MixerEvent? { await iterator.next() }
}

/// Time moved by hand: timers run when `advance` passes them, in order, on the caller's thread.
final class TestClock: SessionClock, @unchecked Sendable {
    // (@unchecked: all state is behind `state`.)
    private struct Timer {
        let id: Int
        let due: Duration
        let action: @Sendable () -> Void
    }

    private let state = Locked<(now: Duration, timers: [Timer], next: Int)>((.zero, [], 0))

    var now: Duration { state.withLock { $0.now } }

    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> SessionTimer {
        let id = state.withLock { state in
            state.next += 1
            state.timers.append(Timer(id: state.next, due: state.now + delay, action: action))
            return state.next
        }
        return SessionTimer { [weak self] in self?.state.withLock { $0.timers.removeAll { $0.id == id } } }
    }

    /// Moves time on, running every timer that falls due.
    func advance(by duration: Duration) {
        let due: [Timer] = state.withLock { state in
            state.now += duration
            let due = state.timers.filter { $0.due <= state.now }.sorted { $0.due < $1.due }
            state.timers.removeAll { $0.due <= state.now }
            return due
        }
        for timer in due { timer.action() }
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
