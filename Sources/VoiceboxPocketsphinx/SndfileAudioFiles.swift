import VoiceboxCore
import VoiceboxSndfile

/// The service's `AudioFiles` through libsndfile and libsamplerate (see `AudioFileReader` for
/// the formats, and for why FIFOs, devices and directories are refused without being opened).
public struct SndfileAudioFiles: AudioFiles {
    public init() {}

    public func open(path: String) throws -> any AudioFile {
        try AudioFileReader(path: path)
    }

    /// Through /proc/self/fd: a new open file description of the same file (its own offset), with
    /// every check a path gets. A headerless .raw file cannot be told by name here: formats with a
    /// header only.
    public func open(descriptor: Int32) throws -> any AudioFile {
        try AudioFileReader(path: "/proc/self/fd/\(descriptor)", name: "the file passed as a descriptor")
    }
}

