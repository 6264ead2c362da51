/// What Voicebox changed in others' audio, written down before it changes it, so that a
/// voiceboxd that died mid-interruption is cleaned up after by the next one: no desktop is left
/// with muted music.
public struct InterruptionJournal: Sendable, Codable, Equatable {
    /// A stream, and how to tell it is still the same one (indexes are reused after a restart).
    public struct Stream: Sendable, Codable, Equatable {
        public var id: UInt32
        public var processID: Int32?
        public var applicationName: String?
        /// Ducked: the volume before and the volume we set. Muted: both nil.
        public var originalVolume: [UInt32]?
        public var ourVolume: [UInt32]?

        public init(id: UInt32, processID: Int32?, applicationName: String?, originalVolume: [UInt32]? = nil,
                    ourVolume: [UInt32]? = nil) {
            self.id = id
            self.processID = processID
            self.applicationName = applicationName
            self.originalVolume = originalVolume
            self.ourVolume = ourVolume
        }

        func matches(_ stream: PlaybackStream) -> Bool {
            stream.id == id && stream.processID == processID && stream.applicationName == applicationName
        }
    }

    public var muted: [Stream] = []
    public var ducked: [Stream] = []
    public var players: [MediaPlayer] = []

    public init() {}

    public var isEmpty: Bool { muted.isEmpty && ducked.isEmpty && players.isEmpty }
}

/// Where the journal is kept: a file under $XDG_RUNTIME_DIR in production.
public protocol JournalStore: Sendable {
    /// Replaces what is stored. Throws when it cannot (a full disk): the caller goes on without.
    func save(_ journal: InterruptionJournal) throws
    func load() -> InterruptionJournal?
    func clear()
}
