import Glibc
import VoiceboxContract

/// What Voicebox changed in others' audio, written down before it changes it, so that a
/// voiceboxd that died mid-interruption is cleaned up after by the next one: no desktop is left
/// with muted music, and no sound server remembers a level Voicebox set.
public struct InterruptionJournal: Sendable, Codable, Equatable {
    /// A stream, and how to tell it is still the same one (indexes are reused after a restart).
    public struct Stream: Sendable, Codable, Equatable {
        public var id: UInt32
        public var processID: Int32?
        public var applicationName: String?
        /// The server's memory entry it is saved under (`PlaybackStream.memoryKey`).
        public var memoryKey: String?
        /// Ducked: the volume before and the volume we set. Muted: both nil.
        public var originalVolume: [UInt32]?
        public var ourVolume: [UInt32]?

        public init(id: UInt32, processID: Int32?, applicationName: String?, memoryKey: String? = nil,
                    originalVolume: [UInt32]? = nil, ourVolume: [UInt32]? = nil) {
            self.id = id
            self.processID = processID
            self.applicationName = applicationName
            self.memoryKey = memoryKey
            self.originalVolume = originalVolume
            self.ourVolume = ourVolume
        }

        func matches(_ stream: PlaybackStream) -> Bool {
            stream.id == id && stream.processID == processID && stream.applicationName == applicationName
        }
    }

    /// The interruption it describes (for the `ended` a successor announces).
    public var reason: InterruptionReason?
    public var id: UInt64?
    public var muted: [Stream] = []
    public var ducked: [Stream] = []
    public var players: [MediaPlayer] = []
    /// The server's memory entries as they were before Voicebox touched a stream of theirs.
    public var memory: [MemoryRecord] = []

    public init(reason: InterruptionReason? = nil, id: UInt64? = nil) {
        self.reason = reason
        self.id = id
    }

    public var isEmpty: Bool { muted.isEmpty && ducked.isEmpty && players.isEmpty && memory.isEmpty }

    private enum CodingKeys: String, CodingKey { case reason, id, muted, ducked, players, memory }

    /// Reads journals of earlier versions too (without reason, id and memory).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        reason = try container.decodeIfPresent(InterruptionReason.self, forKey: .reason)
        id = try container.decodeIfPresent(UInt64.self, forKey: .id)
        muted = try container.decodeIfPresent([Stream].self, forKey: .muted) ?? []
        ducked = try container.decodeIfPresent([Stream].self, forKey: .ducked) ?? []
        players = try container.decodeIfPresent([MediaPlayer].self, forKey: .players) ?? []
        memory = try container.decodeIfPresent([MemoryRecord].self, forKey: .memory) ?? []
    }
}

/// One entry of the server's memory as it was before Voicebox changed a stream saved under it,
/// and the marks Voicebox's changes may leave in it: how to tell the server's memory of our change
/// (and a stream that started from it) from the user's own setting.
public struct MemoryRecord: Sendable, Codable, Equatable {
    public var name: String
    /// nil: the server had no entry of that name (it is deleted again afterwards).
    public var before: RememberedSetting?
    /// Voicebox muted a stream saved under it.
    public var muted: Bool
    /// The volumes Voicebox set on streams saved under it.
    public var levels: [[UInt32]]
    /// The level of the first stream Voicebox lowered under it: the user's, where `before` has none.
    public var original: [UInt32]?

    public init(name: String, before: RememberedSetting?, muted: Bool = false, levels: [[UInt32]] = [], original: [UInt32]? = nil) {
        self.name = name
        self.before = before
        self.muted = muted
        self.levels = levels
        self.original = original
    }

    /// The entry holds one of our changes (the server saved it from a stream we changed).
    func shows(_ setting: RememberedSetting) -> Bool {
        (setting.muted && muted && before?.muted != true) || setting.volume.map { levels.contains($0) } == true
    }

    /// The stream started from our change rather than from the user's setting: muted, or at a level we set.
    func isInherited(mute stream: PlaybackStream) -> Bool { stream.muted && muted && before?.muted != true }
    func isInherited(volume stream: PlaybackStream) -> Bool { levels.contains { Self.isAlike($0, stream.volume) } }

    /// The level the user gave this application or role: what the server held before, or the
    /// level of the first stream we lowered; only with the stream's own channel count.
    func userLevel(channels: Int) -> [UInt32]? {
        if let volume = before?.volume, volume.count == channels { return volume }
        if let original, original.count == channels { return original }
        return nil
    }

    /// `now`, what the entry (PulseAudio) or a stream saved under it (pipewire-pulse) shows, is what
    /// this record kept or a change of ours, to within WirePlumber's rounding: nothing the user set
    /// since. Levels of another channel count are compared by their loudest channel.
    func accounts(for now: RememberedSetting?) -> Bool {
        guard let now else { return before == nil }
        guard let before else { return Self.isBlank(now) || shows(now) }
        guard now.device == before.device, now.muted == before.muted || (now.muted && muted) else { return false }
        guard let volume = now.volume else { return before.volume == nil }
        let known = levels + [before.volume, original].compactMap { $0 }
        return known.contains { level in
            level.count == volume.count ? Self.isAlike(level, volume) : Self.isAlike([level.max() ?? 0], [volume.max() ?? 0])
        }
    }

    /// The same level, to within WirePlumber's rounding: it keeps a level as a linear float (the
    /// cube of PulseAudio's scale) with 6 decimals, so one comes back off by up to 5e-7 in linear:
    /// by 1 at 11000 of 65536, by up to 9 at 2250 (a -15 dB duck of a quiet application), by up
    /// to 520 at 0; and by one more step of PulseAudio's scale.
    static func isAlike(_ known: [UInt32], _ seen: [UInt32]) -> Bool {
        known.count == seen.count && zip(known, seen).allSatisfy { a, b in
            let linear = pow(Double(a) / 65536, 3)
            let low = cbrt(max(linear - 5e-7, 0)) * 65536 - 1, high = cbrt(linear + 5e-7) * 65536 + 1
            return Double(b) >= low && Double(b) <= high
        }
    }

    /// This record with the marks of `other` too: every change of ours either saw is known as ours.
    func withMarks(of other: MemoryRecord) -> MemoryRecord {
        var record = self
        record.muted = muted || other.muted
        for level in other.levels where !levels.contains(level) { record.levels.append(level) }
        record.original = original ?? other.original
        return record
    }

    /// An entry that says nothing (no volume, not muted, no device): as good as none.
    static func isBlank(_ setting: RememberedSetting) -> Bool {
        setting.volume == nil && !setting.muted && setting.device == nil
    }
}

/// Where the journal is kept: a file under $XDG_RUNTIME_DIR in production.
public protocol JournalStore: Sendable {
    /// Replaces what is stored. Throws when it cannot (a full disk): the caller goes on without.
    func save(_ journal: InterruptionJournal) throws
    func load() -> InterruptionJournal?
    func clear()
}
