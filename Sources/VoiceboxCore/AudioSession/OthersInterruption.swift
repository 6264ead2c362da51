import VoiceboxContract

/// What one interruption of others did: the players it paused, the streams it muted or lowered,
/// and the server's memory entries of those streams as they were before. Plain data, owned by
/// the AudioSession; everything in it is in the journal before the change it describes is made.
struct OthersInterruption: Sendable {
    let reason: InterruptionReason
    let id: UInt64
    var policy: OthersPolicy
    var players: [MediaPlayer] = []
    /// Streams we muted or lowered, kept after they are gone (a restore skips what is not there).
    var muted: [InterruptionJournal.Stream] = []
    var ducked: [InterruptionJournal.Stream] = []
    var memory: [MemoryRecord] = []
    /// Streams module-role-cork corked for us while our trigger plays.
    var corked: UInt32 = 0
    /// Our trigger stream's index, while it plays.
    var trigger: UInt32?

    init(reason: InterruptionReason, id: UInt64, policy: OthersPolicy) {
        self.reason = reason
        self.id = id
        self.policy = policy
    }

    func isMuted(_ id: UInt32) -> Bool { muted.contains { $0.id == id } }
    func isDucked(_ id: UInt32) -> Bool { ducked.contains { $0.id == id } }
    func isChanged(_ id: UInt32) -> Bool { isMuted(id) || isDucked(id) }

    func record(_ name: String?) -> MemoryRecord? { name.flatMap { name in memory.first { $0.name == name } } }

    /// Adds the records of entries not yet kept (the first one read is the one before us).
    mutating func keep(_ records: [MemoryRecord]) {
        for record in records where !memory.contains(where: { $0.name == record.name }) { memory.append(record) }
    }

    /// Marks that we muted a stream saved under `name`.
    mutating func markMuted(_ name: String?) {
        guard let index = memory.firstIndex(where: { $0.name == name }) else { return }
        memory[index].muted = true
    }

    /// Marks that we set `level` on a stream saved under `name`, lowered from `original`.
    mutating func markLevel(_ name: String?, _ level: [UInt32], from original: [UInt32]) {
        guard let index = memory.firstIndex(where: { $0.name == name }) else { return }
        if !memory[index].levels.contains(level) { memory[index].levels.append(level) }
        if memory[index].original == nil { memory[index].original = original }
    }

    var journal: InterruptionJournal {
        var entry = InterruptionJournal(reason: reason, id: id)
        entry.muted = muted
        entry.ducked = ducked
        entry.players = players
        entry.memory = memory
        return entry
    }

    func info(shouldResume: Bool?) -> InterruptionInfo {
        InterruptionInfo(reason: reason, id: id, shouldResume: shouldResume, pausedPlayers: players.map(\.name),
                         mutedStreams: UInt32(muted.count), duckedStreams: UInt32(ducked.count), corkedStreams: corked)
    }
}

extension InterruptionJournal.Stream {
    init(muting stream: PlaybackStream) {
        self.init(id: stream.id, processID: stream.processID, applicationName: stream.applicationName, memoryKey: stream.memoryKey)
    }

    init(ducking stream: PlaybackStream, from original: [UInt32], to lowered: [UInt32]) {
        self.init(id: stream.id, processID: stream.processID, applicationName: stream.applicationName, memoryKey: stream.memoryKey,
                  originalVolume: original, ourVolume: lowered)
    }
}
