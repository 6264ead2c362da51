import CPocketsphinx
import Glibc
import VoiceboxCore

/// A file that lives in memory only (memfd_create), read through its /proc/self/fd path, gone
/// when this goes away. pocketsphinx takes several keyphrases only from a file; a decoder worker
/// may not create files on disk (its confinement refuses opens for writing).
final class MemoryFile {
    let path: String
    private let descriptor: Int32

    init(contents: String) throws {
        let fd = voicebox_memfd_create("voicebox-keyphrases")
        guard fd >= 0 else {
            throw RecognitionError.engineFailure("cannot create a file in memory: \(String(cString: strerror(errno)))")
        }
        let bytes = Array(contents.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else {
                close(fd)
                throw RecognitionError.engineFailure("cannot write a file in memory: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
        descriptor = fd
        path = "/proc/self/fd/\(fd)"
    }

    deinit { close(descriptor) }
}
