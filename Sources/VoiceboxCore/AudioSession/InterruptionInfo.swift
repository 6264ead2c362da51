/// Why an audio interruption is in progress.
public enum InterruptionReason: String, Sendable, Codable {
    /// Voicebox is speaking: others are paused, ducked or left alone (option `others`).
    case speaking
    /// Voicebox is listening to a microphone.
    case listening
    /// Something more important (a call) took the audio: Voicebox holds its own work.
    case external
}

/// AudioInterruption's `info`.
public struct InterruptionInfo: Sendable, Equatable {
    public var reason: InterruptionReason
    /// The utterance or recognition concerned; 0 for external.
    public var id: UInt64
    /// On `ended` only: whether the interrupted side should (and, for what Voicebox controls, did) resume.
    public var shouldResume: Bool?
    public var pausedPlayers: [String]
    public var mutedStreams: UInt32
    public var duckedStreams: UInt32
    public var corkedStreams: UInt32

    public init(reason: InterruptionReason, id: UInt64, shouldResume: Bool? = nil, pausedPlayers: [String] = [],
                mutedStreams: UInt32 = 0, duckedStreams: UInt32 = 0, corkedStreams: UInt32 = 0) {
        self.reason = reason
        self.id = id
        self.shouldResume = shouldResume
        self.pausedPlayers = pausedPlayers
        self.mutedStreams = mutedStreams
        self.duckedStreams = duckedStreams
        self.corkedStreams = corkedStreams
    }
}

public enum InterruptionState: String, Sendable {
    case began, ended
}
