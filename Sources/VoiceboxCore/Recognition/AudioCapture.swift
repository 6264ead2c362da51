import VoiceboxContract

/// What the service needs from a microphone. PulseAudio stands behind it in production
/// (module VoiceboxPulse); tests swap in a scripted one.
///
/// Each `open` is independent (its own server connection), so a sound server that restarted
/// between two captures is simply found again by the next one.
public protocol AudioCapture: Sendable {
    /// Starts recording from `source` (a server source name), or from the default source if nil.
    /// Returns once the server has set up the recording (audio follows within tens of ms).
    /// Throws `CaptureError`, or `CancellationError` when the calling task is cancelled.
    func open(source: String?) async throws -> any CaptureStream
}

/// One running recording. Dropping it without `close()` also releases the microphone, later.
public protocol CaptureStream: Sendable {
    /// 16 kHz mono signed 16-bit samples, in chunks of about 20–50 ms, in order.
    /// There is exactly one reader. The stream finishes after `close()`, or when the recording
    /// fails (see `failure`). If the reader falls far behind (seconds), the oldest chunks are dropped.
    var chunks: AsyncStream<[Int16]> { get }

    /// Why the recording ended on its own; nil while it runs and after a plain `close()`.
    /// Set before `chunks` finishes, so a reader can check it once its loop ends.
    var failure: CaptureError? { get async }

    /// Holds the recording (no audio comes, the microphone stays open) or lets it go on: a call
    /// has the audio meanwhile.
    func setCorked(_ corked: Bool) async

    /// Releases the microphone: when this returns, the server no longer records for us
    /// (the recording indicator goes away). Idempotent.
    func close() async
}
