import Glibc

/// The few file operations the service needs, on libc: small files read whole (its journal,
/// /proc entries), directory listings, and an atomic replace. Errors are errno values.
public enum FileSystem {
    public struct Failure: Error, CustomStringConvertible {
        public let operation: String
        public let path: String
        public let code: Int32
        public var description: String { "\(operation) \(path): \(String(cString: strerror(code)))" }
    }

    /// The whole file, or nil if it cannot be opened or read or is longer than `limit` bytes.
    /// Never blocks on a FIFO: opened non-blocking, and only regular files and /proc entries
    /// (which stat as regular files) are read.
    public static func contents(atPath path: String, limit: Int = 1 << 20) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { return result }
            result += chunk[0..<count]
            guard result.count <= limit else { return nil }
        }
    }

    /// The file as UTF-8 text (invalid bytes repaired), or nil as for `contents`.
    public static func text(atPath path: String, limit: Int = 1 << 20) -> String? {
        contents(atPath: path, limit: limit).map { String(decoding: $0, as: UTF8.self) }
    }

    /// Whether anything is at `path` (after symbolic links).
    public static func exists(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0
    }

    /// The names in a directory, without "." and "..", or nil if it cannot be read.
    public static func entries(ofDirectory path: String) -> [String]? {
        guard let directory = opendir(path) else { return nil }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// The directory and any missing parents, each new one of mode `mode`.
    public static func createDirectories(_ path: String, mode: mode_t) throws(Failure) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for part in path.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, mode) != 0, errno != EEXIST {
                throw Failure(operation: "mkdir", path: prefix, code: errno)
            }
        }
    }

    /// Replaces the file with `bytes` at once: written to a temporary file beside it, synced and
    /// renamed over it, so a crash leaves the old file or the new one, never half of one.
    public static func replace(_ path: String, with bytes: [UInt8], mode: mode_t = 0o600) throws(Failure) {
        let temporary = path + ".new-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else { throw Failure(operation: "open", path: temporary, code: errno) }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                let code = errno
                close(fd)
                unlink(temporary)
                throw Failure(operation: "write", path: temporary, code: code)
            }
            written += count
        }
        let synced = fsync(fd) == 0 ? 0 : errno
        let closed = close(fd) == 0 ? 0 : errno
        guard synced == 0, closed == 0 else {
            unlink(temporary)
            throw Failure(operation: synced != 0 ? "fsync" : "close", path: temporary, code: synced != 0 ? synced : closed)
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw Failure(operation: "rename", path: path, code: code)
        }
    }

    /// Removes the file; a missing one is not an error.
    public static func remove(_ path: String) {
        _ = unlink(path)
    }

    /// The path without its last component ("/" for a file at the root, "." for a bare name).
    public static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
