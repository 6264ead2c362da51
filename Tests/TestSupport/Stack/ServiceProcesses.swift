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
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { pid_t($0) }.filter { pid in
            guard let comm = try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8),
                  comm.trimmingCharacters(in: .whitespacesAndNewlines) == String(program.prefix(15)),
                  let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let afterName = stat.range(of: ") ") else { return false }
            let fields = stat[afterName.upperBound...].split(separator: " ")
            return fields.count > 1 && pid_t(fields[1]) == daemon
        }
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
