/// How an utterance ended: SpeechFinished's `reason`.
public enum SynthesisEnd: String, Sendable, StringCodedArgument {
    /// Spoken to the end.
    case done
    /// Stopped because we asked (`stop`).
    case cancelled
    /// Dropped by the engine for a message of higher priority.
    case interrupted
    /// The engine failed or went away.
    case error
}
