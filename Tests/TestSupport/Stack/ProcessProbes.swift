import Foundation
import Glibc

/// What /proc says about another process: for tests that watch voiceboxd for leaks.

/// How many descriptors `pid` holds open (the entries of /proc/<pid>/fd); nil when it is gone.
func openDescriptorCount(_ pid: pid_t) -> Int? {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
}

/// Resident memory of `pid` in bytes (VmRSS of /proc/<pid>/status); nil when it is gone.
func residentBytes(_ pid: pid_t) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return nil }
    // "VmRSS:	   12345 kB"
    let kilobytes = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap { Int($0) }
    return kilobytes.map { $0 * 1024 }
}

/// A count of descriptors once it has settled: transient ones (a reply being sent, a file being
/// closed by another thread) get `settle` to go away; returns the lowest count seen.
func settledDescriptorCount(_ pid: pid_t, atMost limit: Int, settle: Duration = .seconds(10)) async -> Int? {
    let deadline = ContinuousClock.now + settle
    var lowest = openDescriptorCount(pid)
    while let current = lowest, current > limit, ContinuousClock.now < deadline {
        try? await Task.sleep(for: .milliseconds(50))
        guard let next = openDescriptorCount(pid) else { return nil }
        lowest = min(current, next)
    }
    return lowest
}

/// What each descriptor of `pid` points at (readlink of /proc/<pid>/fd/N, e.g. "pipe:[123]"),
/// by number: for naming the descriptors a leak test found left open.
func openDescriptors(_ pid: pid_t) -> [Int: String] {
    let directory = "/proc/\(pid)/fd"
    var targets: [Int: String] = [:]
    for name in (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [] {
        guard let number = Int(name),
              let target = try? FileManager.default.destinationOfSymbolicLink(atPath: directory + "/" + name) else { continue }
        targets[number] = target
    }
    return targets
}

/// The descriptors in `now` that were not in `before` (as openDescriptors gives them), for a
/// failure message.
func descriptorsAdded(_ before: [Int: String], _ now: [Int: String]) -> String {
    let added = now.filter { before[$0.key] != $0.value }.sorted { $0.key < $1.key }
    return added.map { "\($0.key) → \($0.value)" }.joined(separator: ", ")
}

/// This process's resident memory, from /proc.
func residentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let pages = status.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

/// VmRSS once it has come down: on a loaded machine (the whole suite, CI) a decoder's unload
/// or the trim can land after the rest; read every 0.5 s for up to 10 s and keep the lowest,
/// stopping early once it is back within 1 MiB of `before`. Growth that stays is still seen.
func settledResidentBytes(_ pid: pid_t, towards before: Int) async -> Int {
    var lowest = residentBytes(pid) ?? Int.max
    for _ in 0..<20 where lowest > before + (1 << 20) {
        try? await Task.sleep(for: .milliseconds(500))
        lowest = min(lowest, residentBytes(pid) ?? Int.max)
    }
    return lowest
}
