import VoiceboxCore
import VoiceboxPocketsphinx
import VoiceboxSndfile

extension RecognitionEngine {
    /// Transcribes a file as the service reads one: opened by `AudioFileReader` (what the service's
    /// file worker runs) and read by `FileReading`, the daemon's own loop, so the tests hear what its callers hear. Decodes
    /// synchronously on the calling thread, as the service does on a recognition's queue;
    /// cancelling the task abandons the file between chunks (CancellationError).
    ///
    /// - Parameter progress: about once a second of audio and at the end, with the seconds read
    ///   and the file's length (nil when the file does not say).
    func transcribeFile(path: String, configuration: RecognitionConfiguration = .init(),
                        progress: ((_ seconds: Double, _ total: Double?) -> Void)? = nil) async throws -> FileReading.Outcome {
        let file = try AudioFileReader(path: path)
        let decoder = try await makeDecoder(configuration)
        var reported = 0.0
        let outcome = try await FileReading.read(file, through: decoder, shouldStop: {
            try Task.checkCancellation()
            return false
        }, afterChunk: { seconds, _ in
            guard let progress, seconds - reported >= 1 else { return }
            reported = seconds
            progress(seconds, file.duration)
        })
        progress?(outcome.seconds, file.duration)
        return outcome
    }
}
