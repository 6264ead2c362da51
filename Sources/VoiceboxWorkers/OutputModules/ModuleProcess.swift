import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxSpawn
import VoiceboxThreads

/// Why a module could not do what it was asked; the reason is for people (the log, a caller).
struct ModuleFailure: Error, CustomStringConvertible {
    let description: String
}

/// One output module in a confined process of its own (WorkerProtocol's `output-module` mode),
/// started and initialized (`INIT`, `AUDIO audio_output_method=server`), then spoken to in its
/// protocol by one thread at a time: whoever started it, then the one rendering with it.
/// Every wait is bounded; a module that takes longer, ends, or writes what the protocol does not
/// allow fails, and is killed when dismissed.
final class ModuleProcess: Sendable {
    let module: ModuleCatalog.Module
    /// How long it may take to answer (Bounds' module-start, module-reply, module-silence).
    let bounds: Bounds
    private let child: Child
    /// Our ends of its standard input and output, non-blocking; closed by `dismiss`.
    let input: Int32
    let output: Int32
    private let reader = Locked(ModuleOutput())
    /// Items read but not yet taken.
    private let backlog = Locked<[ModuleOutput.Item]>([])
    private let dismissed = Locked(false)

    var pid: pid_t { child.pid }
    /// Whether the process has ended (a spare killed while it waited); never blocks.
    var hasEnded: Bool { child.termination != nil }

    /// Starts the module and initializes it; blocks, at most module-start + 2 × module-reply.
    init(_ module: ModuleCatalog.Module, bounds: Bounds, workerPath: String, launcher: WorkerLauncher) throws(ModuleFailure) {
        self.module = module
        self.bounds = bounds
        var spec = ChildSpec(workerPath, [WorkerProtocol.outputModuleMode, "--parent", "\(getpid())", "--module", module.program]
                             + (module.configuration.map { ["--config", $0] } ?? []),
                             environment: WorkerAudioFile.environment + Self.moduleEnvironment)
        spec.standardInput = .pipe
        spec.standardOutput = .pipe
        spec.standardError = .inherit
        spec.workingDirectory = "/"
        let started: Spawn.Started
        do {
            started = try launcher.start(spec)
        } catch {
            throw ModuleFailure(description: "cannot start \(module.name): \(error)")
        }
        child = started.child
        input = started.input ?? -1
        output = started.output ?? -1
        for fd in [input, output] { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        // A larger pipe for its audio: fewer turns between it and the pump (a page rendered 8 %
        // faster with 256 KiB than with the default 64). Still a bound: it waits when it is full.
        _ = fcntl(output, Self.setPipeSize, Self.outputPipeBytes)
        do {
            try send("INIT\nAUDIO\naudio_output_method=server\n.\n")  // read line by line: sent at once
            try expect(200..<300, within: bounds[.moduleStart], "INIT")
            try expect(200..<300, "AUDIO")
            try expect(200..<300, "the audio settings")
        } catch {
            dismiss(ended: false)
            throw error
        }
    }

    static let outputPipeBytes: Int32 = 256 << 10
    /// F_SETPIPE_SZ (linux/fcntl.h; Glibc's module does not import it).
    static let setPipeSize: Int32 = 1031

    /// What the module sees of our environment: enough to find its files, nothing that leads to a
    /// bus, a sound server or a display.
    static var moduleEnvironment: [String] {
        ["HOME=" + ProcessEnvironment.homeDirectory, "PATH=/usr/bin:/bin",
         "LANG=" + (ProcessEnvironment.value("LANG") ?? "C.UTF-8")]
    }

    // MARK: Exchanges

    /// Writes all of `text`, waiting at most `bound` (module-reply) for room.
    func send(_ text: String, within given: Duration? = nil) throws(ModuleFailure) {
        let bound = given ?? bounds[.moduleReply]
        let bytes = Array(text.utf8)
        let deadline = ContinuousClock.now + bound
        var offset = 0
        while offset < bytes.count {
            let wrote = bytes[offset...].withUnsafeBytes { write(input, $0.baseAddress, $0.count) }
            if wrote > 0 {
                offset += wrote
                continue
            }
            guard wrote < 0, errno == EAGAIN || errno == EINTR else { throw ended("while it was being written to") }
            guard try wait(for: input, events: POLLOUT, until: deadline) else {
                throw ModuleFailure(description: "\(module.name) took nothing for \(bound.components.seconds) s")
            }
        }
    }

    /// The next reply, which must have a code in `codes`, within `bound` (module-reply); events may
    /// not come before it.
    func expect(_ codes: Range<Int>, within bound: Duration? = nil, _ what: String) throws(ModuleFailure) {
        let item = try next(within: bound ?? bounds[.moduleReply])
        guard case .reply(let code, let lines) = item else {
            throw ModuleFailure(description: "\(module.name) answered \(what) with \(item)")
        }
        guard codes.contains(code) else {
            throw ModuleFailure(description: "\(module.name) refused \(what): \(code) \(lines.joined(separator: " "))")
        }
    }

    /// The next item, waiting at most `bound` for it.
    func next(within bound: Duration) throws(ModuleFailure) -> ModuleOutput.Item {
        let deadline = ContinuousClock.now + bound
        while true {
            if let item = backlog.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return item }
            guard try wait(for: output, events: POLLIN, until: deadline) else {
                throw ModuleFailure(description: "\(module.name) said nothing for \(bound.components.seconds) s")
            }
            let items = try readAvailable()
            backlog.withLock { $0 += items }
        }
    }

    /// The items read with a reply but not taken yet (what followed the reply at once).
    func takeBacklog() -> [ModuleOutput.Item] {
        backlog.withLock { items in
            defer { items = [] }
            return items
        }
    }

    /// What has arrived: the items it completes (none if nothing arrived). At the end of its
    /// output, a failure saying how the module ended.
    func readAvailable() throws(ModuleFailure) -> [ModuleOutput.Item] {
        var buffer = [UInt8](repeating: 0, count: Int(Self.outputPipeBytes))
        let count = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
        if count < 0 {
            if errno == EAGAIN || errno == EINTR { return [] }
            throw ModuleFailure(description: "cannot read from \(module.name): \(String(cString: strerror(errno)))")
        }
        guard count > 0 else { throw ended("while it was rendering") }
        do throws(ModuleOutput.Violation) {
            return try reader.withLock { reader throws(ModuleOutput.Violation) in try reader.feed(buffer[0..<count]) }
        } catch {
            throw ModuleFailure(description: "\(module.name) broke its protocol: \(error)")
        }
    }

    /// Whether `fd` became ready for `events` before `deadline`.
    private func wait(for fd: Int32, events: Int32, until deadline: ContinuousClock.Instant) throws(ModuleFailure) -> Bool {
        let left = deadline - ContinuousClock.now
        guard left > .zero else { return false }
        var entry = pollfd(fd: fd, events: Int16(events), revents: 0)
        let ready = poll(&entry, 1, Child.milliseconds(left))
        if ready < 0 && errno != EINTR { throw ModuleFailure(description: "poll: \(String(cString: strerror(errno)))") }
        return ready != 0  // ready, or interrupted (EINTR): look again
    }

    /// The module's end, named: how it ended, as far as can be told within a short wait.
    func ended(_ when: String) -> ModuleFailure {
        let termination = child.wait(timeout: bounds[.moduleExit])
        let how = termination.map { "\($0)" } ?? "closed its output"
        return ModuleFailure(description: "\(module.name) \(how) \(when)")
    }

    /// Done with it: its pipes closed (it exits at the end of its input), killed if it had not
    /// finished, reaped within the bound worker-reap. Blocks that long at most.
    func dismiss(ended cleanly: Bool) {
        let first = dismissed.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        close(input)
        close(output)
        if !cleanly { child.signal(SIGKILL) }
        _ = child.end(within: bounds[.workerReap])
    }

    deinit { dismiss(ended: false) }
}
