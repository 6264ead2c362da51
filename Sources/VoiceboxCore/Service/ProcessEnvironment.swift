import CSystem
import Glibc

/// The process's environment, home directory and processors, read from libc: voiceboxd links
/// no Foundation (see docs/architecture.md: it was a large share of the service's resident memory).
public enum ProcessEnvironment {
    /// `environ` as a dictionary; the first of repeated names wins, as getenv(3) does.
    public static var variables: [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                let name = String(text[..<equals])
                if result[name] == nil { result[name] = String(text[text.index(after: equals)...]) }
            }
            entry += 1
        }
        return result
    }

    /// One variable (getenv(3)), nil when unset: no dictionary of the whole environment for it.
    public static func value(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// `$HOME`, else the password database's entry for our user, else "/".
    public static var homeDirectory: String {
        if let home = getenv("HOME"), home.pointee != 0 { return String(cString: home) }
        if let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir { return String(cString: directory) }
        return "/"
    }

    /// The processors online (sysconf), at least 1.
    public static var onlineProcessors: Int { max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))) }

    /// The cores this process may run on: its affinity (sched_getaffinity: taskset, systemd's
    /// CPUAffinity=), which sysconf does not look at; the online count if the kernel will not say.
    public static var usableCores: Int { usableCores(ofProcess: getpid()) }

    /// The cores process `pid` may run on (its main thread's mask; 0: the calling thread), as `usableCores`.
    public static func usableCores(ofProcess pid: pid_t) -> Int {
        let allowed = Int(voicebox_affinity_cores(pid))
        return allowed > 0 ? min(allowed, onlineProcessors) : onlineProcessors
    }
}
