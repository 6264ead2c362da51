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
