import Glibc
import VoiceboxCore
import VoiceboxSpawn

/// The speech-dispatcher process behind a socket, found through /proc, and how to restart it the
/// way it was started. Blocking (a scan of /proc, bounded waits): run off the owner queue.
///
/// Used only to recover a server that has stopped speaking or answering (see SpeechdCore+Recovery):
/// such a server is silent for every program of the session, a screen reader included, until it
/// is restarted. Only a server running as this user is touched.
struct SpeechdServerProcess: Sendable {
    let pid: pid_t
    /// Its command line and environment as it was started (/proc/PID/cmdline, /proc/PID/environ).
    let arguments: [String]
    let environment: [String]
    /// The program it runs (/proc/PID/exe), when that is still on disk.
    let executable: String?
    /// Its output modules (sd_espeak-ng...): started before the server detached from its launcher,
    /// so they are not its children; they are the processes reading the pipes it writes to.
    let modules: [pid_t]

    /// The process behind a configured speech-dispatcher address (nil: the default), if it is a unix
    /// socket and the process runs as this user.
    static func find(address configured: String?) -> SpeechdServerProcess? {
        guard case .success(.unixSocket(let path)) = SpeechdAddress.resolve(configured) else { return nil }
        return find(listeningOn: path)
    }

    /// Whether anybody, of any user, listens on the unix socket behind a configured address.
    static func anyoneListens(address configured: String?) -> Bool {
        guard case .success(.unixSocket(let path)) = SpeechdAddress.resolve(configured) else { return true }
        return listeningInode(path) != nil
    }

    /// The process listening on the unix socket `path`, if it runs as this user.
    static func find(listeningOn path: String) -> SpeechdServerProcess? {
        guard let inode = listeningInode(path) else { return nil }
        let target = "socket:[\(inode)]"
        for pid in processes() where pid != getpid() && ownedByUs(pid) {
            guard descriptorTargets(pid).contains(target) else { continue }
            // (A process exiting has no command line left but may still hold the socket: not it.)
            guard let arguments = nulSeparated("/proc/\(pid)/cmdline"), !arguments.isEmpty else { continue }
            let environment = nulSeparated("/proc/\(pid)/environ") ?? []
            let executable = link("/proc/\(pid)/exe").flatMap { $0.hasSuffix(" (deleted)") ? nil : $0 }
            return SpeechdServerProcess(pid: pid, arguments: arguments, environment: environment, executable: executable,
                                        modules: modules(of: pid))
        }
        return nil
    }

    /// Stops the server (TERM, then KILL after `grace`) and its modules (KILL: a stopped or wedged
    /// module answers nothing else), and waits until they are gone, each for at most `exit`. False if
    /// one outlived it. speech-dispatcher asks each module to quit on TERM; a frozen module never
    /// answers, so the grace is kept short (`speechd-stop-grace`, 0.5 s).
    func stop(grace: Duration, exit: Duration) -> Bool {
        kill(pid, SIGTERM)
        if !ForeignProcess.waitForExit(pid, timeout: grace) { kill(pid, SIGKILL) }
        for module in modules { kill(module, SIGKILL) }
        return ([pid] + modules).allSatisfy { ForeignProcess.waitForExit($0, timeout: exit) }
    }

    /// Starts it again with its own command line and environment, in daemon mode (a server that
    /// ran in the foreground, `-s`, is started with `-d`), from `/`, and returns once its launcher has
    /// exited, i.e. the server is ready (modules up), within `start`. nil on success, else why not.
    func relaunch(within start: Duration) -> String? {
        var spec = ChildSpec(executable ?? arguments[0],
                             arguments.dropFirst().map { $0 == "-s" || $0 == "--run-single" ? "-d" : $0 },
                             environment: environment)
        spec.searchPath = executable == nil
        spec.workingDirectory = "/"
        spec.standardError = .pipe  // why it did not start, if it does not
        let ending: Spawn.Ending
        do {
            ending = try Spawn.run(spec, timeout: start)
        } catch {
            return error.description
        }
        if ending.timedOut { return "\(spec.path) did not finish starting within \(SpeechdTimings.text(start.inSeconds))" }
        switch ending.termination {
        case .exited(0): return nil
        default:
            let said = ending.errorText.trimmingWhitespace
            return "\(spec.path) did not start again (\(ending.termination))" + (said.isEmpty ? "" : ": \(said)")
        }
    }

    // MARK: /proc

    /// The inode of the listening unix socket bound to `path` (/proc/net/unix: flag 00010000 is
    /// __SO_ACCEPTCON, a listening socket).
    private static func listeningInode(_ path: String) -> String? {
        guard let data = procFile("/proc/net/unix") else { return nil }
        let table = String(decoding: data, as: UTF8.self)
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", maxSplits: 7, omittingEmptySubsequences: true)
            guard fields.count == 8, fields[7] == path, let flags = Int(fields[3], radix: 16), flags & 0x10000 != 0 else { continue }
            return String(fields[6])
        }
        return nil
    }

    private static func processes() -> [pid_t] {
        (FileSystem.entries(ofDirectory: "/proc") ?? []).compactMap { pid_t($0) }
    }

    /// Whether `pid` runs with this process's real user id.
    private static func ownedByUs(_ pid: pid_t) -> Bool {
        var info = stat()
        return stat("/proc/\(pid)", &info) == 0 && info.st_uid == getuid()
    }

    private static func descriptorTargets(_ pid: pid_t) -> Set<String> {
        let directory = "/proc/\(pid)/fd"
        let names = FileSystem.entries(ofDirectory: directory) ?? []
        return Set(names.compactMap { link(directory + "/" + $0) })
    }

    private static func link(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        let count = readlink(path, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The processes whose standard input is a pipe the server holds, and which run an output
    /// module (from speech-dispatcher's module directory, or named sd_*).
    private static func modules(of server: pid_t) -> [pid_t] {
        let pipes = descriptorTargets(server).filter { $0.hasPrefix("pipe:") }
        guard !pipes.isEmpty else { return [] }
        return processes().filter { pid in
            guard pid != server, pid != getpid(), ownedByUs(pid), let input = link("/proc/\(pid)/fd/0"), pipes.contains(input) else {
                return false
            }
            let program = link("/proc/\(pid)/exe") ?? nulSeparated("/proc/\(pid)/cmdline")?.first ?? ""
            return program.contains("/speech-dispatcher-modules/") || program.split(separator: "/").last?.hasPrefix("sd_") == true
        }
    }

    private static func nulSeparated(_ path: String) -> [String]? {
        guard let data = procFile(path) else { return nil }
        return data.split(separator: 0, omittingEmptySubsequences: false).dropLast(data.last == 0 ? 1 : 0)
            .map { String(decoding: $0, as: UTF8.self) }
    }

    /// Running, not a zombie.
    static func alive(_ pid: pid_t) -> Bool { ForeignProcess.isRunning(pid) }

    /// Stopped by a signal or a tracer (/proc/PID/stat's state `T` or `t`): it does nothing until
    /// continued, and nothing we send continues it.
    static func isStopped(_ pid: pid_t) -> Bool { ForeignProcess.isStopped(pid) }

    /// The server's processes that are stopped (see isStopped).
    var stopped: [pid_t] { ([pid] + modules).filter(Self.isStopped) }

    /// How much work the server and its modules have done so far: CPU ticks (/proc/PID/stat) and
    /// read and write calls (/proc/PID/io; a module playing audio mostly waits, but writes to the
    /// sound server all the time). Compared across a wait, equal means none of them did anything.
    var activity: [UInt64] { ([pid] + modules).map(Self.activity(of:)) }

    private static func activity(of pid: pid_t) -> UInt64 {
        var total: UInt64 = 0
        if let fields = statFields(pid), fields.count > 12 {
            // After the state: ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime.
            total += (UInt64(fields[11]) ?? 0) + (UInt64(fields[12]) ?? 0)
        }
        if let io = procFile("/proc/\(pid)/io") {
            for line in String(decoding: io, as: UTF8.self).split(separator: "\n")
            where line.hasPrefix("syscr:") || line.hasPrefix("syscw:") {
                total += UInt64(line.split(separator: " ").last ?? "") ?? 0
            }
        }
        return total
    }

    /// /proc/PID/stat's fields after the command name (which may hold spaces), from the state on.
    private static func statFields(_ pid: pid_t) -> [Substring]? {
        guard let data = procFile("/proc/\(pid)/stat"), let close = data.lastIndex(of: UInt8(ascii: ")")) else { return nil }
        return String(decoding: data[(close + 1)...], as: UTF8.self).split(separator: " ")
    }

    /// The whole of a /proc file, however long (/proc/net/unix grows with the sockets open).
    private static func procFile(_ path: String) -> [UInt8]? {
        FileSystem.contents(atPath: path, limit: .max)
    }
}
