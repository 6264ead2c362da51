import CSeccomp
import Glibc
import VoiceboxContract

/// What a speech-dispatcher output module may do, installed before the worker executes it (see
/// WorkerProtocol's `output-module` mode) and inherited by it: what a module needs to load its
/// program, its data and its configuration, talk on its standard input and output, and run its
/// threads; measured with strace on sd_espeak-ng 0.11.4 (INIT, AUDIO, SET, SPEAK with marks,
/// LIST VOICES, STOP, QUIT) and the dynamic loader. Everything else fails with EPERM.
/// - It dies with the service (PR_SET_PDEATHSIG), gains no privileges (PR_SET_NO_NEW_PRIVS), and
///   runs at a lower priority (`moduleNice`).
/// - Files open read-only only (a write or create fails with EACCES): it writes nothing anywhere
///   but its standard output and error.
/// - Sockets fail with EACCES: no network, no bus, no sound server. (sd_espeak-ng's audio library
///   looks for a PulseAudio server when it loads and goes on without one: refused, not killed.)
/// - Threads may be made, processes may not: clone only with CLONE_THREAD (clone3, whose flags a
///   filter cannot read, answers ENOSYS, and glibc falls back to clone).
/// - execve stays allowed: a filter cannot tell the exec that starts the module from a later one.
///   What a later exec runs is under this same filter, so it gains nothing the module lacks.
/// - ptrace, process_vm_*, io_uring kill it; signals go to itself only; ioctls are questions only.
enum ModuleConfinement {
    static let allowed = [
        "read", "readv", "pread64", "write", "writev", "close", "lseek", "fstat", "newfstatat", "statx", "stat", "lstat",
        "fcntl", "dup", "dup2", "dup3", "pipe", "pipe2", "mmap", "munmap", "mremap", "mprotect", "madvise", "brk", "futex",
        "exit", "exit_group", "rt_sigreturn", "rt_sigprocmask", "rt_sigaction", "sigaltstack", "restart_syscall", "getpid",
        "gettid", "getppid", "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups",
        "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time", "sched_yield",
        "sched_getaffinity", "getrandom", "sysinfo", "uname", "prlimit64", "getrlimit", "membarrier", "rseq",
        "set_robust_list", "get_robust_list", "set_tid_address", "prctl", "arch_prctl", "poll", "ppoll", "select",
        "pselect6", "epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "eventfd2", "getdents64", "readlink",
        "readlinkat", "access", "faccessat", "faccessat2", "getcwd", "umask", "getpriority", "execve",
    ]
    static let killing = ["ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter",
                          "io_uring_register"]
    static let refused = ["socket", "socketpair", "connect", "bind", "listen", "accept", "accept4"]

    /// nil once confined, else why it could not be.
    static func apply(parent: pid_t) -> String? {
        guard voicebox_prctl(PR_SET_PDEATHSIG, UInt(SIGKILL)) == 0 else { return "PR_SET_PDEATHSIG: \(lastError)" }
        guard getppid() == parent else { exit(0) }  // the service died before the line above
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, WorkerProtocol.moduleNice)
        var noCore = rlimit(rlim_cur: 0, rlim_max: 0)
        _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &noCore)
        guard voicebox_prctl(PR_SET_NO_NEW_PRIVS, 1) == 0 else { return "PR_SET_NO_NEW_PRIVS: \(lastError)" }
        guard let filter = seccomp_init(voicebox_act_errno(UInt16(EPERM))) else { return "seccomp_init failed" }
        defer { seccomp_release(filter) }
        func add(_ names: [String], _ action: UInt32, _ comparisons: [scmp_arg_cmp] = []) -> String? {
            addSeccompRules(to: filter, names, action, comparisons)
        }
        let own = voicebox_masked_argument(0, UInt64(UInt32.max), UInt64(UInt32(bitPattern: getpid())))
        let thread: UInt64 = 0x0001_0000  // CLONE_THREAD (linux/sched.h; not imported)
        let denied = voicebox_act_errno(UInt16(EACCES))
        var problem = add(allowed, UInt32(SCMP_ACT_ALLOW))
            ?? add(["kill", "tgkill"], UInt32(SCMP_ACT_ALLOW), [own])
            ?? add(["clone"], UInt32(SCMP_ACT_ALLOW), [voicebox_masked_argument(0, thread, thread)])
            ?? add(["clone3"], voicebox_act_errno(UInt16(ENOSYS)))
            ?? add(killing, UInt32(SCMP_ACT_KILL_PROCESS))
            ?? add(refused, denied)
        for request in Confinement.ioctls where problem == nil {
            problem = add(["ioctl"], UInt32(SCMP_ACT_ALLOW), [voicebox_masked_argument(1, UInt64(UInt32.max), request)])
        }
        // Read-only opens only (the rules are disjoint: no creating, truncating or writing).
        let reading = UInt64(O_ACCMODE | O_CREAT | O_TRUNC)
        for (name, flags) in [("open", UInt32(1)), ("openat", UInt32(2))] where problem == nil {
            problem = add([name], denied, [voicebox_masked_argument(flags, UInt64(O_ACCMODE), UInt64(O_WRONLY))])
                ?? add([name], denied, [voicebox_masked_argument(flags, UInt64(O_ACCMODE), UInt64(O_RDWR))])
                ?? add([name], UInt32(SCMP_ACT_ALLOW), [voicebox_masked_argument(flags, reading, 0)])
        }
        problem = problem ?? add(Confinement.opening.filter { $0 != "open" && $0 != "openat" }, denied)
        if let problem { return problem }
        let loaded = seccomp_load(filter)
        guard loaded == 0 else { return "seccomp_load: \(String(cString: strerror(-loaded)))" }
        return nil
    }

    private static var lastError: String { String(cString: strerror(errno)) }
}
