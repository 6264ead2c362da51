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
    public var grace: Duration = Bound.grace.standard
    /// A microphone recognition held by a call for longer than this ends (reason `interrupted`).
    public var listeningInterruptionLimit: Duration = Bound.callLimit.standard
    /// Roles that mark a call: never touched, and they interrupt Voicebox.
    public var callRoles: Set<String> = ["phone", "communication"]
    /// Roles never touched either (lower case): accessibility output, which a blind user needs
    /// while Voicebox speaks as much as before.
    public var spareRoles: Set<String> = ["a11y"]

    public init() {}
}
