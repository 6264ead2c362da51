import VoiceboxCore

/// The service's `AudioFiles` through libsndfile and libsamplerate (see `AudioFileReader` for
/// the formats, and for why FIFOs, devices and directories are refused without being opened).
public struct SndfileAudioFiles: AudioFiles {
    public init() {}

    public func open(path: String) throws -> any AudioFile {
        try AudioFileReader(path: path)
    }
}

extension AudioFileReader: AudioFile {}
