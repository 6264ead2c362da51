import Glibc

/// The checks every audio file passes before anything reads it, whether named by a path or passed
/// as a descriptor: a regular file, not empty, the same file from the check to the open.
public enum RegularFile {
    /// Opens `path` for reading if it is a regular file. stat first, so a FIFO or a device is
    /// refused without being opened (opening a FIFO blocks until a writer comes); then opened
    /// non-blocking and checked again, in case the path changed in between. `name`: how messages
    /// call the file (the path by default). Throws `RecognitionError.unreadableAudio`.
    public static func open(_ path: String, name: String? = nil) throws -> Int32 {
        let name = name ?? path
        var before = stat()
        guard stat(path, &before) == 0 else { throw unreadable(name, errno) }
        try requireRegularFile(name, before)
        let fd = Glibc.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw unreadable(name, errno) }
        var after = stat()
        guard fstat(fd, &after) == 0 else {
            let error = errno
            close(fd)
            throw unreadable(name, error)
        }
        do {
            try requireRegularFile(name, after)
            guard after.st_dev == before.st_dev, after.st_ino == before.st_ino else {
                throw RecognitionError.unreadableAudio("\(name): the file changed while it was opened")
            }
            guard after.st_size > 0 else { throw RecognitionError.unreadableAudio("\(name): the file is empty") }
        } catch {
            close(fd)
            throw error
        }
        return fd
    }

    private static func requireRegularFile(_ name: String, _ status: stat) throws {
        let kind: String
        switch status.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: kind = "a directory"
        case S_IFIFO: kind = "a FIFO"
        case S_IFCHR: kind = "a character device"
        case S_IFBLK: kind = "a block device"
        case S_IFSOCK: kind = "a socket"
        default: kind = "not a regular file"
        }
        throw RecognitionError.unreadableAudio("\(name): is \(kind), not an audio file")
    }

    private static func unreadable(_ name: String, _ error: Int32) -> RecognitionError {
        .unreadableAudio("\(name): \(String(cString: strerror(error)))")
    }
}
