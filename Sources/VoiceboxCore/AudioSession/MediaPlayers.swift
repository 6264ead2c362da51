/// Media players that can be asked to pause and play: MPRIS over the session bus in production
/// (VoiceboxDaemon), scripted in tests. Every call is bounded by a short timeout: one hung
/// player delays nobody.
public protocol MediaPlayers: Sendable {
    /// Every player playing now.
    func playing() async -> [MediaPlayer]
    /// Asks it to pause; true if it did.
    func pause(_ player: MediaPlayer) async -> Bool
    /// Asks it to play again, only if the same owner still holds its name and it is still paused
    /// (a user who paused or played it meanwhile wins); true if it was asked.
    func resumeIfStillPaused(_ player: MediaPlayer) async -> Bool
}

/// One player: its bus name and the unique name that owned it when it was paused.
public struct MediaPlayer: Sendable, Hashable, Codable {
    /// e.g. "org.mpris.MediaPlayer2.mpv".
    public var name: String
    /// e.g. ":1.42": a player that restarted meanwhile is another owner, and is left alone.
    public var owner: String
    /// Its process, to tell which sound-server streams it accounts for.
    public var processID: Int32?
    /// Where it was when we paused it (MPRIS Position, µs), if it says: a player found elsewhere
    /// later was played meanwhile, by the user, also while no voiceboxd was there to watch.
    public var position: Int64?

    public init(name: String, owner: String, processID: Int32? = nil, position: Int64? = nil) {
        self.name = name
        self.owner = owner
        self.processID = processID
        self.position = position
    }
}
