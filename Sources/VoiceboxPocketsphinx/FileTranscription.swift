import VoiceboxCore

/// What a whole file said.
public struct FileTranscription: Sendable, Equatable {
    /// Every segment joined; its confidence is the mean of all its words'.
    public var result: RecognitionResult
    /// One result per stretch of speech (the file is cut at pauses and every
    /// `maxSegmentSeconds`); word times count from the start of the file.
    public var segments: [RecognitionResult]
    /// Seconds of audio read.
    public var duration: Double
}

extension RecognitionEngine {
    /// Streams an audio file (any format, rate and channels `AudioFileReader` takes) through one
    /// decoder, cutting it at every pause the voice-activity detector hears, as
    /// `pocketsphinx_continuous` does. Memory stays bounded whatever the file's length.
    ///
    /// - Parameters:
    ///   - maxSegmentSeconds: speech without a pause is cut here, to bound the decoder's work.
    ///   - progress: called about once a second of audio and at the end, with the seconds read
    ///     and the file's length (nil when the file does not say).
    /// - Throws: `RecognitionError`, or `CancellationError` when the task is cancelled.
    public func transcribeFile(path: String, configuration: RecognitionConfiguration = .init(),
                               maxSegmentSeconds: Double = 30,
                               progress: (@Sendable (_ seconds: Double, _ total: Double?) -> Void)? = nil)
        async throws -> FileTranscription {
        guard maxSegmentSeconds > 0 else {
            throw RecognitionError.invalidArgument("maxSegmentSeconds must be positive")
        }
        let reader = try AudioFileReader(path: path)
        let decoder = try await makeDecoder(configuration)
        var endpointer = Endpointer(silenceSeconds: 0, maxSeconds: maxSegmentSeconds)
        var segments: [RecognitionResult] = []
        var reported = 0.0
        func keep(_ result: RecognitionResult) {
            if !result.text.isEmpty { segments.append(result) }
        }

        while true {
            try Task.checkCancellation()
            // 2048 samples: pocketsphinx_continuous's chunk, so segments end where its do.
            let samples = try reader.read(maxSamples: 2048)
            if samples.isEmpty { break }
            let inSpeech = try decoder.process(samples)
            let seconds = Double(samples.count) / Double(AudioFileReader.sampleRate)
            if endpointer.feed(inSpeech: inSpeech, seconds: seconds) != .continue {
                keep(try decoder.finish())
                endpointer.reset()
            }
            if let progress, reader.position - reported >= 1 {
                reported = reader.position
                progress(reported, reader.duration)
            }
            await Task.yield()  // decoding is CPU work: let other tasks in between chunks
        }
        keep(try decoder.finish())
        progress?(reader.position, reader.duration)
        return FileTranscription(result: RecognitionResult(joining: segments), segments: segments, duration: reader.position)
    }
}
