/// What the service needs from the bus it serves on: to announce things and to learn when a
/// caller leaves. The D-Bus face implements it; tests can record instead.
public protocol ServiceBus: Sendable {
    func emit(_ signal: ServiceSignal)
    func publish(_ property: ServiceProperty)
    /// Calls `onVanish` once when `caller` (a unique bus name) leaves the bus.
    func watchCaller(_ caller: String, onVanish: @escaping @Sendable (String) -> Void) -> UInt64
    func unwatchCaller(_ token: UInt64)
}

public enum ServiceSignal: Sendable, Equatable {
    case speechStarted(UInt64)
    case speechMark(UInt64, String)
    case speechFinished(UInt64, SynthesisEnd)
    case voicesChanged
    case recognitionStarted(UInt64)
    /// The best guess so far (only when the caller asked for partial results).
    case recognitionPartial(UInt64, String)
    /// The microphone's loudness, 0...1.
    case audioLevel(UInt64, Double)
    /// How much of a file has been decoded, 0...1.
    case recognitionProgress(UInt64, Double)
    /// Every recognition that started ends with this; the text is empty when it was cancelled or failed.
    case recognitionFinished(UInt64, String)
    case audioInterruption(InterruptionState, InterruptionInfo)
}

public enum ServiceProperty: Sendable, Equatable {
    case version(String)
    case speaking(Bool)
    /// Speech is held because at least one caller paused it.
    case paused(Bool)
    /// An audio interruption, either way, is in progress.
    case interrupted(Bool)
    case voiceCount(UInt32)
    /// A recognition is recording from a microphone.
    case listening(Bool)
    /// The id of the microphone recognition in progress (admitted and not yet ended), 0 when none.
    case listeningID(UInt64)
    /// The id of the microphone recognition in progress when it is a dictation (option
    /// `dictation`), 0 when none is.
    case dictationID(UInt64)
    /// BCP-47 tags of the languages recognition has models for.
    case recognitionLanguages([String])
}
