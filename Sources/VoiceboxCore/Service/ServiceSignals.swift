/// Every signal of the service (org.voicebox.Speech1), in the contract's order.
public enum ServiceSignals {
    public static let speechStarted = ServiceSignal("SpeechStarted", "An utterance began to sound.", ("id", UInt64.self))
    public static let speechMark = ServiceSignal("SpeechMark", "An SSML <mark/> was reached.",
                                                 ("id", UInt64.self), ("name", String.self))
    public static let speechFinished = ServiceSignal("SpeechFinished", "done, cancelled, interrupted or error.",
                                                     ("id", UInt64.self), ("reason", SynthesisEnd.self))
    public static let voicesChanged = ServiceSignal("VoicesChanged", "The voice list changed.")
    public static let recognitionStarted = ServiceSignal("RecognitionStarted", "The microphone is open, or the file is being decoded.",
                                                         ("id", UInt64.self))
    /// The best guess so far (only when the caller asked for partial results).
    public static let recognitionPartial = ServiceSignal("RecognitionPartial", "The best guess so far.",
                                                         ("id", UInt64.self), ("text", String.self))
    public static let audioLevel = ServiceSignal("AudioLevel", "The microphone's loudness, 0 ... 1.",
                                                 ("id", UInt64.self), ("level", Double.self))
    public static let recognitionProgress = ServiceSignal("RecognitionProgress", "The fraction of a file decoded.",
                                                          ("id", UInt64.self), ("fraction", Double.self))
    /// Every recognition that started ends with this; the text is empty when it was cancelled or failed.
    public static let recognitionFinished = ServiceSignal("RecognitionFinished", "Every RecognitionStarted ends with one.",
                                                          ("id", UInt64.self), ("text", String.self))
    public static let audioInterruption = ServiceSignal(
        "AudioInterruption", "began or ended; info: reason, id, should_resume, paused_players, muted/ducked/corked_streams.",
        ("state", InterruptionState.self), ("info", InterruptionInfo.self))
}
