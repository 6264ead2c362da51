/// Why a recognition ended (the `reason` of Recognize's details).
public enum RecognitionEnd: String, Sendable, CaseIterable {
    /// Speech, then `silence_seconds` of trailing silence (microphone).
    case endpoint
    /// StopRecognition: what had been heard so far.
    case stopped
    /// `max_seconds` of audio went by.
    case maxDuration = "max_duration"
    /// The whole file was read.
    case endOfFile = "end_of_file"
    /// A call held the microphone for longer than the service waits (AudioSession).
    case interrupted
    /// A stream's writer sent nothing for the idle bound (`stream_idle_seconds`).
    case timeout
}

/// What Recognize answers.
public struct Recognition: Sendable, Equatable {
    public var id: UInt64
    public var result: RecognitionResult
    /// Seconds of audio taken (from the microphone, or read from the file).
    public var duration: Double
    public var end: RecognitionEnd
    /// The model's language (e.g. "en-US" for a request of "en-GB").
    public var language: String

    public init(id: UInt64, result: RecognitionResult, duration: Double, end: RecognitionEnd, language: String) {
        self.id = id
        self.result = result
        self.duration = duration
        self.end = end
        self.language = language
    }
}
