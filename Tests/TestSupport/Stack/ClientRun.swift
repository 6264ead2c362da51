import Foundation
import Glibc
import VoiceboxBus
import VoiceboxContract
import XCTest

/// A `voicebox` process whose standard output (a pipe, or a pseudo-terminal) and standard
/// error are collected as they come.
final class ClientRun: Sendable {
    let process: Subprocess
    private let out = Shared<[UInt8]>([])
    private let err = Shared<[UInt8]>([])
    private let open = Shared(2)

    /// `environment`: the child's whole environment (nil: this process's). `input`: its standard
    /// input (nil: this process's).
    init(_ stack: Stack, program: String? = nil, _ arguments: [String], terminal: Bool = false,
         environment: [String: String]? = nil, input: [UInt8]? = nil) throws {
        let (outRead, outWrite) = terminal ? try Self.pseudoTerminal() : try Self.pipePair()
        let (errRead, errWrite) = try Self.pipePair()
        var inputFD: Int32?
        if let input {
            // Through a file, so that a large input never blocks the test.
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-stdin-\(UUID().uuidString)").path
            _ = FileManager.default.createFile(atPath: path, contents: Data(input))
            inputFD = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            unlink(path)
        }
        process = try Subprocess(program ?? stack.clientPath, arguments, environment: environment, stdinFD: inputFD, stdoutFD: outWrite,
                                 stderrFD: errWrite)
        if let inputFD { close(inputFD) }
        close(outWrite)
        close(errWrite)
        Self.drain(outRead, into: out, open: open)
        Self.drain(errRead, into: err, open: open)
    }

    /// voicebox started by `/bin/sh -c script` with $0 the client and $1... `arguments` (a name that
    /// is not UTF-8, a working directory of its own).
    convenience init(_ stack: Stack, shell script: String, _ arguments: [String]) throws {
        try self.init(stack, program: "/bin/sh", ["-c", script, stack.clientPath] + arguments)
    }

    var stdout: String { String(decoding: out.value, as: UTF8.self) }
    var stderr: String { String(decoding: err.value, as: UTF8.self) }

    /// The exit status (nil: still running after `timeout`, then killed) once both outputs have ended.
    func finish(timeout: Duration = .seconds(60)) async -> Int32? {
        let status = await process.wait(timeout: timeout)
        if status == nil { process.signal(SIGKILL) }
        try? await waitUntil("the outputs to close", timeout: .seconds(5)) { self.open.value == 0 }
        return status
    }

    private static func pipePair() throws -> (Int32, Int32) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        // Not inherited under their own numbers (the child gets them as 1 and 2 only): a helper that
        // voicebox leaves in the background (xclip serving the clipboard) must not hold them open.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return (fds[0], fds[1])
    }

    /// (master, slave): the child's output is a terminal.
    private static func pseudoTerminal() throws -> (Int32, Int32) {
        // posix_openpt and friends are not in Swift's Glibc module: their ioctls are.
        let master = Glibc.open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard master >= 0, ioctl(master, 0x4004_5431 /* TIOCSPTLCK */, &unlock) == 0,
              ioctl(master, 0x8004_5430 /* TIOCGPTN */, &number) == 0 else {
            throw POSIXError(.ENOTTY)
        }
        let slave = Glibc.open("/dev/pts/\(number)", O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard slave >= 0 else { throw POSIXError(.ENOTTY) }
        // No translation of "\n" to "\r\n": the bytes as written.
        var settings = termios()
        tcgetattr(slave, &settings)
        cfmakeraw(&settings)
        tcsetattr(slave, TCSANOW, &settings)
        return (master, slave)
    }

    /// Reads `fd` to its end (EOF, or EIO for a terminal whose other side closed) on a thread of its own.
    private static func drain(_ fd: Int32, into buffer: Shared<[UInt8]>, open: Shared<Int>) {
        let thread = Thread {
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(fd, &chunk, chunk.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { break }
                buffer.withLock { $0.append(contentsOf: chunk[0..<count]) }
            }
            close(fd)
            open.withLock { $0 -= 1 }
        }
        thread.start()
    }
}

/// `voicebox ARGUMENTS` on the stack, run to its end: its exit status and what it wrote.
func voicebox(_ stack: Stack, _ arguments: [String], terminal: Bool = false) async throws -> (Int32?, ClientRun) {
    let client = try ClientRun(stack, arguments, terminal: terminal)
    return (await client.finish(), client)
}
