import CSeccomp
import Glibc

/// What a worker may do once it has its descriptors: read them, compute, write its answer. Applied
/// before it reads a byte of a caller's file.
/// - It dies with the service (PR_SET_PDEATHSIG), and exits if the service is gone already.
/// - No new privileges (PR_SET_NO_NEW_PRIVS): nothing it could exec would gain any.
/// - seccomp: any socket call or exec kills it (SIGSYS); opening a file for writing or creating
///   one fails with EACCES.
enum Confinement {
    static let killed: [String] = ["socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
                                   "execve", "execveat"]

    /// nil once confined, else why it could not be.
    static func apply(parent: pid_t) -> String? {
        guard voicebox_prctl(PR_SET_PDEATHSIG, UInt(SIGKILL)) == 0 else { return "PR_SET_PDEATHSIG: \(lastError)" }
        // The parent may have died before the line above: then nobody would ever kill us.
        guard getppid() == parent else { exit(0) }
        guard voicebox_prctl(PR_SET_NO_NEW_PRIVS, 1) == 0 else { return "PR_SET_NO_NEW_PRIVS: \(lastError)" }
        guard let filter = seccomp_init(UInt32(SCMP_ACT_ALLOW)) else { return "seccomp_init failed" }
        defer { seccomp_release(filter) }
        for name in killed {
            let call = seccomp_syscall_resolve_name(name)
            guard call != __NR_SCMP_ERROR else { continue }  // not on this architecture
            let result = seccomp_rule_add_array(filter, UInt32(SCMP_ACT_KILL_PROCESS), call, 0, nil)
            guard result == 0 else { return "seccomp: \(name): \(String(cString: strerror(-result)))" }
        }
        let refused = voicebox_act_errno(UInt16(EACCES))
        // open(path, flags) has its flags in argument 1, openat(dir, path, flags) in argument 2.
        for (name, argument) in [("open", UInt32(1)), ("openat", UInt32(2))] {
            let call = seccomp_syscall_resolve_name(name)
            guard call != __NR_SCMP_ERROR else { continue }
            let writing: [(mask: UInt64, value: UInt64)] = [(UInt64(O_ACCMODE), UInt64(O_WRONLY)),
                                                            (UInt64(O_ACCMODE), UInt64(O_RDWR)),
                                                            (UInt64(O_CREAT), UInt64(O_CREAT)),
                                                            (UInt64(O_TRUNC), UInt64(O_TRUNC))]
            for (mask, value) in writing {
                var comparison = voicebox_masked_argument(argument, mask, value)
                let result = seccomp_rule_add_array(filter, refused, call, 1, &comparison)
                guard result == 0 else { return "seccomp: \(name): \(String(cString: strerror(-result)))" }
            }
        }
        // creat always writes; openat2's flags are out of a filter's reach (behind a pointer).
        for name in ["creat", "openat2", "open_by_handle_at"] {
            let call = seccomp_syscall_resolve_name(name)
            guard call != __NR_SCMP_ERROR else { continue }
            let result = seccomp_rule_add_array(filter, name == "creat" ? refused : voicebox_act_errno(UInt16(ENOSYS)), call, 0, nil)
            guard result == 0 else { return "seccomp: \(name): \(String(cString: strerror(-result)))" }
        }
        let loaded = seccomp_load(filter)
        guard loaded == 0 else { return "seccomp_load: \(String(cString: strerror(-loaded)))" }
        return nil
    }

    private static var lastError: String { String(cString: strerror(errno)) }
}
