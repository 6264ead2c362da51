import Foundation

/// Files named on the command line, opened by the client itself: the service gets them open (as
/// `fd`, as a sandboxed caller must pass them), and a name need not be UTF-8.
enum Files {
    /// Opens `file` for reading; a failure is one sentence (exit status 1).
    static func open(_ file: Argument) throws(Failure) -> Int32 {
        // Non-blocking: a FIFO without a writer must not hang the client (the service refuses it).
        // The name's own bytes (a String would replace those that are not UTF-8).
        let path = (file.bytes + [0]).map { CChar(bitPattern: $0) }
        let fd = path.withUnsafeBufferPointer { Glibc.open($0.baseAddress!, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) }
        guard fd >= 0 else { throw Failure("cannot open \(file.text): \(String(cString: strerror(errno)))", .refused) }
        return fd
    }

    /// The whole file as text (a grammar).
    static func text(_ file: Argument, limit: Int = 1 << 20) throws(Failure) -> String {
        let fd = try open(file)
        defer { close(fd) }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while data.count <= limit {
            let count = read(fd, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Failure("cannot read \(file.text): \(String(cString: strerror(errno)))", .refused) }
            if count == 0 { return String(decoding: data, as: UTF8.self) }
            data.append(contentsOf: chunk[0..<count])
        }
        throw Failure("\(file.text) is too large for a grammar", .refused)
    }

    /// `*.raw` files have no header (16 kHz mono s16le, pocketsphinx's format); the service reads
    /// only files with one from a descriptor. Such a file is copied behind a WAV header into a
    /// deleted temporary file, whose descriptor is returned instead.
    static func isHeaderless(_ file: Argument) -> Bool {
        file.text.lowercased().hasSuffix(".raw")
    }

    static func withWAVHeader(_ raw: Int32, name: String) throws(Failure) -> Int32 {
        var info = stat()
        guard fstat(raw, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw Failure("\(name) is not a regular file", .refused)
        }
        _ = fcntl(raw, F_SETFL, fcntl(raw, F_GETFL) & ~O_NONBLOCK)
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(directory)/voicebox-raw-XXXXXX".utf8CString)
        let copy = mkstemp(&template)
        guard copy >= 0 else { throw Failure("cannot make a temporary file in \(directory): \(String(cString: strerror(errno)))", .refused) }
        unlink(template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        _ = fcntl(copy, F_SETFD, FD_CLOEXEC)
        let size = UInt32(clamping: (Int64(info.st_size) / 2) * 2)
        var header = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { header.append(contentsOf: $0) } }
        header.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36) &+ size); header.append(contentsOf: Array("WAVE".utf8))
        header.append(contentsOf: Array("fmt ".utf8)); append(UInt32(16)); append(UInt16(1)); append(UInt16(1))
        append(UInt32(16000)); append(UInt32(32000)); append(UInt16(2)); append(UInt16(16))
        header.append(contentsOf: Array("data".utf8)); append(size)
        var ok = header.withUnsafeBytes { write(copy, $0.baseAddress, $0.count) } == header.count
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while ok {
            let count = read(raw, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { ok = count == 0; break }
            ok = chunk.withUnsafeBytes { write(copy, $0.baseAddress, count) } == count
        }
        guard ok else {
            close(copy)
            throw Failure("cannot copy \(name) to a temporary file: \(String(cString: strerror(errno)))", .refused)
        }
        lseek(copy, 0, SEEK_SET)
        return copy
    }
}
