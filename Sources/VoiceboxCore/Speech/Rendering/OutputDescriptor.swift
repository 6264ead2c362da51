import Glibc
import VoiceboxContract
import VoiceboxThreads

/// A caller's descriptor that speech is written into (Synthesize's pipe, Speak's `output`), checked
/// before anything is written and duplicated: the call's own copy closes when the call is answered,
/// this one when the rendering ends (or when it is dropped).
///
/// A pipe is opened anew (through /proc/self/fd), non-blocking: a description of our own, whose
/// flags are ours to set. A regular file is duplicated (its position and flags are the caller's,
/// which a file's writes never wait on).
public final class OutputDescriptor: Sendable {
    public enum Kind: Sendable, Equatable {
        case pipe
        /// `offset`: where the caller's file position was, so where our first byte goes; nil when
        /// writes cannot be placed (O_APPEND, or no position): then nothing is written back.
        case regularFile(offset: Int64?)
    }

    /// What a call accepts.
    public enum Accepted: Sendable {
        case pipe, pipeOrRegularFile
    }

    public let kind: Kind
    private let descriptor: Locked<Int32?>

    /// The descriptor, while it is open (-1 after `close`).
    public var fd: Int32 { descriptor.withLock { $0 ?? -1 } }

    /// Checks `fd` (the caller's, valid for the call) and duplicates it. `what` names it in errors.
    public static func take(_ fd: Int32, accepting accepted: Accepted, what: String) throws(VoiceboxError) -> OutputDescriptor {
        var status = stat()
        guard fstat(fd, &status) == 0 else { throw .invalidArgument("\(what) is not an open descriptor") }
        let flags = fcntl(fd, F_GETFL)
        let mode = status.st_mode & S_IFMT
        let kind: Kind
        switch mode {
        case S_IFIFO:
            kind = .pipe
        case S_IFREG where accepted == .pipeOrRegularFile:
            let position = lseek(fd, 0, SEEK_CUR)
            kind = .regularFile(offset: flags & O_APPEND == 0 && position >= 0 ? Int64(position) : nil)
        default:
            let wanted = accepted == .pipe ? "a pipe" : "a pipe or a regular file"
            throw .invalidArgument("\(what) is \(describe(mode)), not \(wanted)")
        }
        guard flags >= 0, flags & O_ACCMODE == O_WRONLY || flags & O_ACCMODE == O_RDWR else {
            throw .invalidArgument("\(what) is not open for writing (the read end of a pipe, or a file opened read-only)")
        }
        // Opening a pipe whose reader has gone fails (ENXIO): a duplicate then, whose first write
        // finds the reader gone.
        var copy: Int32 = -1
        if kind == .pipe { copy = open("/proc/self/fd/\(fd)", O_WRONLY | O_NONBLOCK | O_CLOEXEC) }
        if copy < 0 { copy = fcntl(fd, F_DUPFD_CLOEXEC, 3) }
        guard copy >= 0 else { throw .init(.failed, "cannot keep \(what): \(String(cString: strerror(errno)))") }
        return OutputDescriptor(copy, kind: kind)
    }

    init(_ fd: Int32, kind: Kind) {
        self.kind = kind
        descriptor = Locked(fd)
    }

    deinit { close() }

    /// Closes it, once: the reader of a pipe then sees its end.
    public func close() {
        let open = descriptor.withLock { value in
            defer { value = nil }
            return value
        }
        if let open { _ = Glibc.close(open) }
    }

    private static func describe(_ mode: mode_t) -> String {
        switch mode {
        case S_IFREG: "a regular file"
        case S_IFDIR: "a directory"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "not a pipe"
        }
    }
}
