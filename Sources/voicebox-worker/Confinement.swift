import CSeccomp
import Glibc

/// What a worker may do once it has its descriptors: read them, compute, write its answer, end.
/// Applied before it reads a byte of a caller's file, so code a hostile file gets to run inside
/// libsndfile can do no more.
/// - It dies with the service (PR_SET_PDEATHSIG), and exits if the service is gone already.
/// - No new privileges (PR_SET_NO_NEW_PRIVS): nothing it could exec would gain any.
/// - seccomp, an allow-list: the calls it needs (measured with strace on WAV, FLAC, Ogg, MP3, float
///   and raw files, plus what the Swift runtime and glibc's abort use), signals to itself only,
///   opening no file at all (EACCES: it reads only what it was handed), sockets, exec, io_uring,
///   ptrace and process_vm_* kill it (SIGSYS), and anything else fails with EPERM (truncate,
///   rename, unlink, fork, kill of another process, an ioctl that is not a question...).
enum Confinement {
    static let allowed = [
        "read", "readv", "pread64", "write", "writev", "close", "lseek", "fstat", "newfstatat", "statx", "fcntl",
        "mmap", "munmap", "mremap", "mprotect", "madvise", "brk", "futex", "exit", "exit_group",
        "rt_sigreturn", "rt_sigprocmask", "rt_sigaction", "sigaltstack", "restart_syscall", "getpid", "gettid",
        "getppid", "getuid", "geteuid", "getgid", "getegid", "clock_gettime", "clock_getres", "gettimeofday",
        "nanosleep", "clock_nanosleep", "sched_yield", "sched_getaffinity", "getrandom", "sysinfo", "uname",
        "prlimit64", "getrlimit", "membarrier", "rseq", "set_robust_list", "prctl", "arch_prctl", "poll", "ppoll",
    ]
    static let killing = ["socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "execve",
                          "execveat", "io_uring_setup", "io_uring_enter", "io_uring_register", "ptrace",
                          "process_vm_readv", "process_vm_writev"]
    static let opening = ["open", "openat", "openat2", "creat", "open_by_handle_at", "name_to_handle_at"]
    /// The ioctls allowed: asking what a descriptor is (a terminal? how much to read?) and
    /// setting its flags. Not TIOCSTI or TIOCLINUX, which would type into the terminal a
    /// descriptor it inherited leads to (voiceboxd run in one); the request is compared on its
    /// low 32 bits, as the kernel reads it, so high bits cannot slip one past.
    static let ioctls: [UInt64] = [0x5401 /* TCGETS */, 0x5413 /* TIOCGWINSZ */, 0x541B /* FIONREAD */,
                                   0x5421 /* FIONBIO */, 0x5450 /* FIONCLEX */, 0x5451 /* FIOCLEX */]

    /// nil once confined, else why it could not be. `readsFiles`: a decoder worker, which reads
    /// its model, may open files read-only and make files in memory (pocketsphinx takes several
    /// keyphrases only from a file).
    static func apply(parent: pid_t, readsFiles: Bool = false) -> String? {
        guard voicebox_prctl(PR_SET_PDEATHSIG, UInt(SIGKILL)) == 0 else { return "PR_SET_PDEATHSIG: \(lastError)" }
        // The parent may have died before the line above: then nobody would ever kill us.
        guard getppid() == parent else { exit(0) }
        guard voicebox_prctl(PR_SET_NO_NEW_PRIVS, 1) == 0 else { return "PR_SET_NO_NEW_PRIVS: \(lastError)" }
        guard let filter = seccomp_init(voicebox_act_errno(UInt16(EPERM))) else { return "seccomp_init failed" }
        defer { seccomp_release(filter) }
        func add(_ names: [String], _ action: UInt32, _ comparisons: [scmp_arg_cmp] = []) -> String? {
            addSeccompRules(to: filter, names, action, comparisons)
        }
        // Signals to itself only (abort raises SIGABRT with tgkill).
        let ownProcess = voicebox_masked_argument(0, UInt64(UInt32.max), UInt64(UInt32(bitPattern: getpid())))
        var problem = add(allowed, UInt32(SCMP_ACT_ALLOW))
            ?? add(["kill", "tgkill"], UInt32(SCMP_ACT_ALLOW), [ownProcess])
        for request in ioctls where problem == nil {
            problem = add(["ioctl"], UInt32(SCMP_ACT_ALLOW), [voicebox_masked_argument(1, UInt64(UInt32.max), request)])
        }
        problem = problem
            ?? add(killing, UInt32(SCMP_ACT_KILL_PROCESS))
        if readsFiles {
            problem = problem ?? add(["memfd_create"], UInt32(SCMP_ACT_ALLOW))
        }
        if sanitized || readsFiles {
            // Read-only opens only (the rules are disjoint: no creating, truncating or writing).
            let refused = voicebox_act_errno(UInt16(EACCES))
            let reading = UInt64(O_ACCMODE | O_CREAT | O_TRUNC)
            for (name, flags) in [("open", UInt32(1)), ("openat", UInt32(2))] where problem == nil {
                problem = add([name], refused, [voicebox_masked_argument(flags, UInt64(O_ACCMODE), UInt64(O_WRONLY))])
                    ?? add([name], refused, [voicebox_masked_argument(flags, UInt64(O_ACCMODE), UInt64(O_RDWR))])
                    ?? add([name], UInt32(SCMP_ACT_ALLOW), [voicebox_masked_argument(flags, reading, 0)])
            }
            problem = problem ?? add(opening.filter { $0 != "open" && $0 != "openat" }, refused)
        } else {
            problem = add(opening, voicebox_act_errno(UInt16(EACCES)))
        }
        if let problem { return problem }
        let loaded = seccomp_load(filter)
        guard loaded == 0 else { return "seccomp_load: \(String(cString: strerror(-loaded)))" }
        return nil
    }

    /// Whether a sanitizer's runtime is linked in (the tests' ThreadSanitizer build): its signal
    /// handler reads /proc/self/maps (pthread_getattr_np), and refused, it dies with its own SIGILL
    /// in place of the crash it was reporting. There, and only there, read-only opens stay allowed.
    static var sanitized: Bool {
        let names: [String] = ["__tsan_init", "__asan_init"]
        return names.contains { name in dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) != nil }
    }

    private static var lastError: String { String(cString: strerror(errno)) }
}
