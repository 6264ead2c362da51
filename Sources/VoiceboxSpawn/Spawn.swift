import Glibc

/// The one way Voicebox starts a child process: posix_spawn with a clean signal state, chosen
/// descriptors and an optional working directory, watched afterwards through its pidfd (`Child`).
///
/// Why the clean signal state: a dispatch worker blocks nearly every signal, voiceboxd blocks TERM
/// and INT for its sigwait and ignores PIPE, and a child inherits all of that: it would then ignore
/// TERM for the rest of its life (measured with speech-dispatcher spawned from a worker).
public enum Spawn {
    /// A started child and our ends of the pipes its spec asked for (ours to close).
    public struct Started: Sendable {
        public let child: Child
        /// Write end of its standard input, when `.pipe`.
        public let input: Int32?
        /// Read ends of its standard output and error, when `.pipe`.
        public let output: Int32?
        public let error: Int32?
    }

    /// Starts `spec`. Pipes are made close-on-exec, so children other threads start meanwhile do
    /// not inherit them.
    public static func start(_ spec: ChildSpec) throws(SpawnError) -> Started {
        var plan = DescriptorPlan()
        func fail(_ code: Int32) -> SpawnError {
            (plan.ours + plan.theirs).forEach { close($0) }
            return SpawnError(path: spec.path, errno: Errno(code))
        }
        if let code = plan.make(for: spec) { throw fail(code) }
        let mapping = plan.mapping
        // Each source is first copied above every target, so that one dup2 cannot overwrite a
        // source another still needs (ours 3 to its 4 and ours 4 to its 3).
        let floor = max(3, (mapping.map(\.target).max() ?? 0) + 1)
        var copies: [Int32] = []
        defer { copies.forEach { close($0) } }
        for (_, source) in mapping {
            let copy = fcntl(source, F_DUPFD_CLOEXEC, floor)
            guard copy >= 0 else { throw fail(errno) }
            copies.append(copy)
        }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if plan.nullInput { posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0) }
        for number in plan.nullOutputs { posix_spawn_file_actions_addopen(&actions, number, "/dev/null", O_WRONLY, 0) }
        for (index, (target, _)) in mapping.enumerated() {
            posix_spawn_file_actions_adddup2(&actions, copies[index], target)  // dup2 clears close-on-exec
        }
        if spec.closeOtherDescriptors { closeFrom(floor, &actions) }
        if let directory = spec.workingDirectory {
            guard addChangeDirectory(directory, &actions) else { throw fail(ENOSYS) }
        }

        let spawned = spawnWithActions(spec, actions: &actions)
        plan.theirs.forEach { close($0) }
        plan.theirs = []
        switch spawned {
        case .failure(let error):
            throw fail(error.code)
        case .success(let pid):
            return Started(child: Child(pid: pid), input: plan.pipeEnds[0], output: plan.pipeEnds[1], error: plan.pipeEnds[2])
        }
    }

    /// posix_spawn(p) with an empty signal mask and every catchable signal at its default.
    static func spawnWithActions(_ spec: ChildSpec, actions: UnsafePointer<posix_spawn_file_actions_t>?) -> Result<pid_t, Errno> {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var all = sigset_t()
        sigemptyset(&all)
        // Real-time ones too; glibc refuses its own two (32 and 33), which a child cannot use anyway.
        for signal in 1...64 where signal != SIGKILL && signal != SIGSTOP { sigaddset(&all, Int32(signal)) }
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argv = ([spec.path] + spec.arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let envp = spec.environment.map { $0.map { strdup($0) } + [nil] }
        defer { envp?.forEach { free($0) } }
        var pid: pid_t = 0
        let result = (envp ?? []).withUnsafeBufferPointer { ownEnvironment in
            let environment = envp == nil ? environ : UnsafeMutablePointer(mutating: ownEnvironment.baseAddress)
            return spec.searchPath ? posix_spawnp(&pid, spec.path, actions, &attributes, argv, environment)
                                   : posix_spawn(&pid, spec.path, actions, &attributes, argv, environment)
        }
        return result == 0 ? .success(pid) : .failure(Errno(result))
    }

    /// Closes every descriptor from `first` up in the child: posix_spawn_file_actions_addclosefrom_np
    /// (glibc 2.34; a GNU extension Swift's Glibc module does not import), else each one open now.
    private static func closeFrom(_ first: Int32, _ actions: inout posix_spawn_file_actions_t) {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np"),
           unsafeBitCast(symbol, to: CloseFrom.self)(&actions, first) == 0 {
            return
        }
        guard let directory = opendir("/proc/self/fd") else { return }
        defer { closedir(directory) }
        let own = dirfd(directory)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let descriptor = Int32(name), descriptor >= first, descriptor != own else { continue }
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
    }

    /// A pipe with both ends close-on-exec from the start: pipe2 (a GNU extension Swift's Glibc
    /// module does not import), else pipe and fcntl.
    fileprivate static func makePipe(_ ends: inout [Int32]) -> Bool {
        typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>?, Int32) -> Int32
        if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2") {
            return unsafeBitCast(symbol, to: Pipe2.self)(&ends, O_CLOEXEC) == 0
        }
        guard pipe(&ends) == 0 else { return false }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return true
    }

    /// posix_spawn_file_actions_addchdir_np (glibc 2.29, likewise not imported); false without it.
    private static func addChangeDirectory(_ path: String, _ actions: inout posix_spawn_file_actions_t) -> Bool {
        typealias ChangeDirectory = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>?, UnsafePointer<CChar>?) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else { return false }
        return unsafeBitCast(symbol, to: ChangeDirectory.self)(&actions, path) == 0
    }
}

/// A child's descriptors before the spawn: the pipes made for it (our ends and its ends), and
/// which descriptor of ours becomes which of its.
private struct DescriptorPlan {
    var ours: [Int32] = []      // our pipe ends, handed back
    var theirs: [Int32] = []    // the child's pipe ends, closed after the spawn
    var mapping: [(target: Int32, source: Int32)] = []
    var nullInput = false
    var nullOutputs: [Int32] = []
    /// Our end of each standard stream that is a pipe.
    var pipeEnds: [Int32: Int32] = [:]

    /// The standard streams and the other descriptors of `spec`; nil, or the errno of a pipe
    /// that could not be made (the pipes made so far are in `ours` and `theirs`).
    mutating func make(for spec: ChildSpec) -> Int32? {
        for (number, stream) in [(Int32(0), spec.standardInput), (1, spec.standardOutput), (2, spec.standardError)] {
            switch stream {
            case .inherit: break
            case .null: if number == 0 { nullInput = true } else { nullOutputs.append(number) }
            case .descriptor(let fd): mapping.append((number, fd))
            case .pipe:
                var ends: [Int32] = [-1, -1]
                guard Spawn.makePipe(&ends) else { return errno }
                let (child, parent) = number == 0 ? (ends[0], ends[1]) : (ends[1], ends[0])
                theirs.append(child)
                ours.append(parent)
                pipeEnds[number] = parent
                mapping.append((number, child))
            }
        }
        for (target, source) in spec.descriptors.sorted(by: { $0.key < $1.key }) {
            precondition(target > 2, "descriptors 0-2 are the standard streams")
            mapping.append((target, source))
        }
        return nil
    }
}
