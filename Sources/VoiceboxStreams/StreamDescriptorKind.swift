import Glibc
import VoiceboxCore

/// What a caller's stream descriptor is, checked before a byte is read: a pipe, a stream socket
/// or a regular file, open for reading; anything else is refused with what to pass instead.
enum StreamDescriptorKind {
    case pipe, socket, file

    init(checking fd: Int32) throws {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw RecognitionError.invalidStream("the descriptor is not open") }
        let flags = fcntl(fd, F_GETFL)
        // O_PATH (010000000 on Linux): a descriptor that names a file but cannot be read.
        if flags >= 0, flags & 0o10000000 != 0 {
            throw RecognitionError.invalidStream("it is an O_PATH descriptor, which cannot be read; pass one opened for reading")
        }
        if flags >= 0, flags & O_ACCMODE == O_WRONLY { throw RecognitionError.invalidStream("it is open for writing only") }
        switch status.st_mode & S_IFMT {
        case S_IFIFO:
            // Ours would be a writer too, so the pipe would never end.
            if flags >= 0, flags & O_ACCMODE == O_RDWR {
                throw RecognitionError.invalidStream("it is a pipe opened for reading and writing, which would never end; "
                                                     + "pass its read end, opened read-only")
            }
            self = .pipe
        case S_IFREG: self = .file
        case S_IFSOCK:
            var type: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else {
                throw RecognitionError.invalidStream("cannot tell what socket it is: \(DescriptorAudioStream.reason(errno))")
            }
            guard type == Int32(SOCK_STREAM.rawValue) else {
                throw RecognitionError.invalidStream("it is a socket that is not a stream (datagrams or packets); "
                                                     + "pass a pipe or a stream socket")
            }
            var listening: Int32 = 0
            length = socklen_t(MemoryLayout<Int32>.size)
            if getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0, listening != 0 {
                throw RecognitionError.invalidStream("it is a listening socket; pass a connected one")
            }
            var peer = sockaddr_storage()
            length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let connected = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 || errno != ENOTCONN }
            }
            guard connected else { throw RecognitionError.invalidStream("it is a stream socket that is not connected; pass a connected one") }
            self = .socket
        case S_IFCHR: throw RecognitionError.invalidStream("it is a character device; pass a pipe or a stream socket")
        case S_IFBLK: throw RecognitionError.invalidStream("it is a block device; pass a pipe or a stream socket")
        case S_IFDIR: throw RecognitionError.invalidStream("it is a directory; pass a pipe or a stream socket")
        default: throw RecognitionError.invalidStream("pass a pipe or a stream socket")
        }
    }

    /// The seconds of audio a regular file holds from where the caller's descriptor stands.
    static func remainingSeconds(of input: StreamInput) -> Double? {
        var status = stat()
        guard fstat(input.descriptor, &status) == 0 else { return nil }
        let offset = max(0, lseek(input.descriptor, 0, SEEK_CUR))
        let bytesPerSecond = Double(input.rate * input.channels * input.encoding.bytesPerSample)
        return Double(max(0, Int64(status.st_size) - Int64(offset))) / bytesPerSecond
    }
}
