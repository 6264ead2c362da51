import Foundation
import Glibc

/// voiceboxd's processes as /proc shows them: its workers, its audio helper, what they map.
enum ServiceProcesses {
    /// voiceboxd's file workers (its children running `voicebox-worker audio-file`).
    static func workers(of daemon: pid_t) -> [pid_t] {
        workers(of: daemon, mode: "audio-file")
    }

    /// voiceboxd's children running `voicebox-worker MODE`.
    static func workers(of daemon: pid_t, mode: String) -> [pid_t] {
        allWorkers(of: daemon).filter { pid in
            guard let cmdline = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")) else { return false }
            return cmdline.split(separator: 0).dropFirst().first.map { String(decoding: $0, as: UTF8.self) } == mode
        }
    }

    /// voiceboxd's children running voicebox-worker, in any mode.
    static func allWorkers(of daemon: pid_t) -> [pid_t] {
        children(of: daemon, running: "voicebox-worker")
    }

    /// `daemon`'s children running `program` (its first 15 bytes, as /proc/PID/comm keeps them).
    static func children(of daemon: pid_t, running program: String) -> [pid_t] {
        children(of: daemon).filter { name(of: $0) == String(program.prefix(15)) }
    }

    /// `daemon`'s children, whichever of its threads started them (found by their parent pid: a
    /// thread's /proc children file lists only what that thread started).
    static func children(of daemon: pid_t) -> [pid_t] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let afterName = stat.range(of: ") ") else { return false }
            let fields = stat[afterName.upperBound...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == daemon
        }
    }

    /// What /proc/PID/comm says (the program's first 15 bytes); nil once it is gone.
    static func name(of pid: pid_t) -> String? {
        (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The output modules (espeak-ng's) voiceboxd runs for the speech provider: spares and renderings.
    static func modules(of daemon: pid_t) -> [pid_t] {
        children(of: daemon, running: "sd_espeak-ng")
    }

    /// The spare modules voiceboxd keeps started ahead for espeak-ng (ModuleSpares.sparesPerEngine).
    static let spareModules = 2

    /// Whether `pid` runs (a zombie waiting for init to reap it does not).
    static func running(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let afterName = stat.range(of: ") ") else { return false }
        return !stat[afterName.upperBound...].hasPrefix("Z")
    }

    /// Bytes waiting unread in the receive queue of `pid`'s socket `fd` (`ss -x`'s Recv-Q), nil if
    /// it has no such socket. A stopped worker with bytes there has a request it cannot answer.
    static func unreadBytes(pid: pid_t, fd: Int32) -> Int? {
        guard let listing = try? runProgram(["ss", "-xpn"], seconds: 10), listing.status == 0 else { return nil }
        for line in listing.output.split(separator: "\n") where line.contains("pid=\(pid),fd=\(fd))") {
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            if columns.count > 2, let queued = Int(columns[2]) { return queued }
        }
        return nil
    }

    /// Whether worker `pid` sits waiting for its next request: in poll(2), ppoll or read(2)
    /// (/proc/PID/syscall: x86_64's numbers 7, 271, 0), with nothing unread on its socket, descriptor 3.
    /// A stopped worker that does not has a request it has not answered.
    static func waitsForRequest(_ pid: pid_t) -> Bool {
        guard let syscall = try? String(contentsOfFile: "/proc/\(pid)/syscall", encoding: .utf8),
              let number = syscall.split(separator: " ").first.flatMap({ Int($0) }) else { return false }
        return [0, 7, 271].contains(number) && unreadBytes(pid: pid, fd: 3) == 0
    }

    /// voiceboxd's children running the worker in decoder mode (busy or warm).
    static func decoderWorkers(of daemon: pid_t) -> [pid_t] {
        workers(of: daemon, mode: "decoder")
    }

    static func mappedLibraries(of pid: pid_t) -> Set<String> {
        // Read to the end: /proc says its files are empty, and a read sized by that stops early.
        let data = FileHandle(forReadingAtPath: "/proc/\(pid)/maps")?.readDataToEndOfFile() ?? Data()
        let maps = String(decoding: data, as: UTF8.self)
        return Set(maps.split(separator: "\n").compactMap { line in
            line.split(separator: " ", omittingEmptySubsequences: true).last.map(String.init)
        }.filter { $0.hasPrefix("/") }.map { ($0 as NSString).lastPathComponent })
    }

    /// voiceboxd's voicebox-audio children.
    static func audioHelpers(of daemon: pid_t) -> [pid_t] {
        children(of: daemon, running: "voicebox-audio")
    }
}
