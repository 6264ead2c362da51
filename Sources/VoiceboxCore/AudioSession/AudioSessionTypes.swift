/// Why an audio interruption is in progress.
public enum InterruptionReason: String, Sendable, Codable {
    /// Voicebox is speaking: others are paused, ducked or left alone (option `others`).
    case speaking
    /// Voicebox is listening to a microphone.
    case listening
    /// Something more important (a call) took the audio: Voicebox holds its own work.
    case external
}

/// What Voicebox does to other audio while it speaks or listens: the `others` option.
public enum OthersPolicy: String, Sendable, CaseIterable, Comparable, Codable {
    /// Leave other audio alone.
    case mix
    /// Lower other streams' volume, then restore it.
    case duck
    /// Pause media players and silence other streams, then resume them.
    case pause

    private var strength: Int {
        switch self {
        case .mix: 0
        case .duck: 1
        case .pause: 2
        }
    }

    public static func < (a: OthersPolicy, b: OthersPolicy) -> Bool { a.strength < b.strength }
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

/// The audio-session policy's settings (voiceboxd options).
public struct AudioSessionSettings: Sendable, Equatable {
    /// `others` when Speak does not say (AVSpeechSynthesizer ducks by default).
    public var speakingDefault: OthersPolicy = .duck
    /// `others` when a microphone Recognize does not say: the microphone should not hear music.
    public var listeningDefault: OthersPolicy = .pause
    /// How far `duck` lowers other streams, in decibels as heard (on the server's cubic volume
    /// scale, converted by libpulse: see `AudioMixer.attenuate`).
    public var duckDecibels: Double = -15
    /// How long after the last utterance or recognition others stay interrupted, so that a run of
    /// them is one interruption (AVSpeechUtterance's postUtteranceDelay plays the same part).
    public var grace: Duration = .milliseconds(300)
    /// A microphone recognition held by a call for longer than this ends (reason `interrupted`).
    public var listeningInterruptionLimit: Duration = .seconds(10)
    /// Roles that mark a call: never touched, and they interrupt Voicebox.
    public var callRoles: Set<String> = ["phone", "communication"]
    /// Roles never touched either (lower case): accessibility output, which a blind user needs
    /// while Voicebox speaks as much as before.
    public var spareRoles: Set<String> = ["a11y"]

    public init() {}
}
