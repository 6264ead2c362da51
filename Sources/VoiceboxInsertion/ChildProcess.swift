import Foundation
#if canImport(Glibc)
import Glibc
#endif
import VoiceboxSpawn

/// One helper program (xdotool, xclip, wl-copy...) run to its end with posix_spawn: its
/// arguments as an array (the text is one of them, never part of a shell string), its standard
/// input written from memory, its output read back, and the whole run bounded by a timeout.
public struct ChildProcess {
    public struct Result: Sendable {
        public var status: Int32
        public var output: [UInt8]
        public var timedOut: Bool
    }

    /// Runs `path` with `arguments`. `input` is written to its standard input (nil: /dev/null);
    /// with `captureOutput` its standard output is returned (otherwise it goes to /dev/null, so a
    /// program that forks into the background, as xclip does, does not hold a pipe open).
    /// Standard error goes to /dev/null. After `timeout` it is killed.
    public static func run(_ path: String, _ arguments: [String], input: [UInt8]? = nil, captureOutput: Bool = false,
                    timeout: Duration = .seconds(5)) throws(InsertionError) -> Result {
        var inPipe: [Int32] = [-1, -1]
        var outPipe: [Int32] = [-1, -1]
        if input != nil { try makePipe(&inPipe) }
        if captureOutput { try makePipe(&outPipe) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if input != nil {
            posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        if captureOutput {
            posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        } else {
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)

        let spawned = CleanSpawn.spawn(path, arguments, actions: &actions)
        if input != nil { close(inPipe[0]) }
        if captureOutput { close(outPipe[1]) }
        let pid: pid_t
        switch spawned {
        case .success(let child): pid = child
        case .failure(let error):
            if input != nil { close(inPipe[1]) }
            if captureOutput { close(outPipe[0]) }
            throw InsertionError.failed("cannot run \(path): \(error)")
        }

        let deadline = ContinuousClock.now + timeout
        var pending = input.map { $0[...] } ?? []
        var writeFD: Int32 = -1
        if input != nil {
            writeFD = inPipe[1]
            _ = fcntl(writeFD, F_SETFL, fcntl(writeFD, F_GETFL) | O_NONBLOCK)
            if pending.isEmpty { close(writeFD); writeFD = -1 }
        }
        var readFD: Int32 = captureOutput ? outPipe[0] : -1
        var output: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var timedOut = false

        // Feed the input and drain the output until both are done or time is up.
        while writeFD >= 0 || readFD >= 0 {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { timedOut = true; break }
            var fds: [pollfd] = []
            if writeFD >= 0 { fds.append(pollfd(fd: writeFD, events: Int16(POLLOUT), revents: 0)) }
            if readFD >= 0 { fds.append(pollfd(fd: readFD, events: Int16(POLLIN), revents: 0)) }
            let milliseconds = Int32(min(1000, max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
            let ready = poll(&fds, nfds_t(fds.count), milliseconds)
            if ready < 0, errno == EINTR { continue }
            guard ready > 0 else { continue }
            for entry in fds where entry.revents != 0 {
                if entry.fd == writeFD {
                    let written = pending.withUnsafeBytes { write(writeFD, $0.baseAddress, $0.count) }
                    if written > 0 { pending = pending.dropFirst(written) }
                    if pending.isEmpty || (written < 0 && errno != EAGAIN && errno != EINTR) {
                        close(writeFD)
                        writeFD = -1
                    }
                } else if entry.fd == readFD {
                    let count = read(readFD, &chunk, chunk.count)
                    if count > 0 {
                        output.append(contentsOf: chunk[0..<count])
                    } else if count == 0 || (errno != EAGAIN && errno != EINTR) {
                        close(readFD)
                        readFD = -1
                    }
                }
            }
        }
        if writeFD >= 0 { close(writeFD) }
        if readFD >= 0 { close(readFD) }

        // Reap it, killing it if it outlives the deadline: the wait sleeps on its pidfd, woken by the
        // exit itself.
        var status: Int32 = 0
        let exit = timedOut ? .stillRunning : CleanSpawn.waitForExit(pid, timeout: max(.zero, deadline - ContinuousClock.now))
        switch exit {
        case .exited:
            break
        case .stillRunning:
            timedOut = true
            kill(pid, SIGKILL)
        case .cannotWait:
            // No pidfds (an old kernel): check now and then, bounded all the same.
            while waitpid(pid, &status, WNOHANG) == 0 && ContinuousClock.now < deadline { usleep(2000) }
            if ContinuousClock.now >= deadline {
                timedOut = true
                kill(pid, SIGKILL)
            }
        }
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let exitStatus: Int32 = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        return Result(status: exitStatus, output: output, timedOut: timedOut)
    }

    /// A pipe whose ends the child does not inherit (it gets them through dup2 only).
    private static func makePipe(_ fds: inout [Int32]) throws(InsertionError) {
        guard pipe(&fds) == 0 else { throw InsertionError.failed("cannot make a pipe") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    }
}
