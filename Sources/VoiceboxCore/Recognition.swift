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

/// Audio files as the service reads them. In production a confined worker process decodes them
/// (VoiceboxWorkers' `WorkerAudioFiles`, libsndfile in `voicebox-worker`); tests swap in a scripted one.
public protocol AudioFiles: Sendable {
    /// Opens a file for reading as 16 kHz mono. Throws `RecognitionError.unreadableAudio` for a
    /// missing, unreadable or non-regular file, or one that is not audio.
    func open(path: String) throws -> any AudioFile
    /// Opens a file the caller passed as a descriptor, on the same terms as a path (a regular file,
    /// not empty, audio). The service reads it through a description of its own, so the caller's
    /// file offset is left alone.
    func open(descriptor: Int32) throws -> any AudioFile
}

/// One open audio file; used from one task at a time.
public protocol AudioFile: AnyObject {
    /// The file's length in seconds, nil when it does not say.
    var duration: Double? { get }
    /// The next samples, 16 kHz mono (about `maxSamples` of them), [] at the end.
    func read(maxSamples: Int) throws -> [Int16]
}
