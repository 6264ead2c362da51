import Glibc
import VoiceboxCore

/// A file only we can read (mkstemp: mode 0600), deleted when this goes away.
final class TemporaryFile {
    let path: String

    init(contents: String) throws {
        let directory = ProcessEnvironment.temporaryDirectory
        var template = Array((directory + "/voicebox-kws-XXXXXX").utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else {
            throw RecognitionError.engineFailure("cannot create a file in \(directory): \(String(cString: strerror(errno)))")
        }
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { close(fd) }
        let bytes = Array(contents.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            unlink(path)
            throw RecognitionError.engineFailure("cannot write \(path)")
        }
    }

    deinit { unlink(path) }
}

enum ProcessEnvironment {
    static var temporaryDirectory: String {
        guard let value = getenv("TMPDIR"), value.pointee != 0 else { return "/tmp" }
        return String(cString: value)
    }
}
