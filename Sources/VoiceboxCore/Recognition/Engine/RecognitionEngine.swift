/// What the service needs from a speech recognizer. `WorkerRecognitionEngine` stands behind it in
/// production (pocketsphinx in decoder worker processes); tests swap in a scripted one, or decode
/// in their own process. No C types cross this line.

/// Receives an engine's own messages, a line at a time (meant for a debug log).
public typealias LogSink = @Sendable (String) -> Void

public protocol RecognitionEngine: Sendable {
    /// BCP-47 tags of the languages this engine has models for.
    var languages: [String] { get }

    /// A decoder for one stream of audio. The first call loads the model (a fraction of a
    /// second); the engine keeps it warm for later calls.
    /// Throws `RecognitionError` for a bad configuration or a model that fails to load.
    func makeDecoder(_ configuration: RecognitionConfiguration) async throws -> sending any SpeechDecoder

    /// Whether the model for `configuration` failed to load the last time it was tried (a
    /// damaged model, a load that timed out). A microphone recognition then makes its decoder
    /// before it opens the microphone, so that a model that fails again pauses no one for nothing.
    func failedToLoadLastTime(_ configuration: RecognitionConfiguration) async -> Bool
}

extension RecognitionEngine {
    public func failedToLoadLastTime(_ configuration: RecognitionConfiguration) async -> Bool { false }
}
