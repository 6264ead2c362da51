import Dispatch
import Glibc
import VoiceboxCore
import VoiceboxSpawn
import VoiceboxThreads

/// Starts workers, always from one thread of its own that lives as long as the launcher.
///
/// Why: a worker asks for SIGKILL when its parent dies (PR_SET_PDEATHSIG), and Linux sends it when
/// the *thread* that started the worker ends, not the process (prctl(2)). Dispatch and the
/// cooperative pool end idle threads, which would kill a worker still reading a long file.
final class WorkerLauncher: Sendable {
    private struct Request: Sendable {
        let spec: ChildSpec
        /// Called on the launching thread with the start's outcome.
        let done: @Sendable (Result<Spawn.Started, SpawnError>) -> Void
    }

    private final class Queue: Sendable {
        let requests = Locked<(pending: [Request], closed: Bool)>(([], false))
        let wake = DispatchSemaphore(value: 0)
    }

    /// How long a start may wait for the launching thread (a posix_spawn takes about a
    /// millisecond): `worker-start`.
    private let startBound: Duration
    private let queue = Queue()

    init(startBound: Duration = Bound.workerStart.standard) {
        self.startBound = startBound
        let queue = queue
        OwnThread.start(name: "worker-launcher") {
            while true {
                queue.wake.wait()
                let (next, closed) = queue.requests.withLock { state in
                    (state.pending.isEmpty ? nil : state.pending.removeFirst(), state.closed)
                }
                guard let request = next else {
                    if closed { return }
                    continue
                }
                request.done(Result { () throws(SpawnError) in try Spawn.start(request.spec) })
            }
        }
    }

    deinit {
        queue.requests.withLock { $0.closed = true }
        queue.wake.signal()
    }

    /// Starts `spec` on the launching thread; waits at most `startBound` for it. Blocks.
    func start(_ spec: ChildSpec) throws -> Spawn.Started {
        let result = Locked<Result<Spawn.Started, SpawnError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        submit(Request(spec: spec) { outcome in
            result.withLock { $0 = outcome }
            done.signal()
        })
        guard done.wait(timeout: .now() + startBound.inSeconds) == .success else {
            // The start may still come; its Child kills and reaps the worker when dropped.
            throw WorkerLaunchTimeout(bound: startBound)
        }
        return try result.withLock { $0 }!.get()
    }

    /// The same without holding a thread: the launching thread resumes the caller, or a timer
    /// does after `startBound`, whichever comes first.
    func start(_ spec: ChildSpec) async throws -> Spawn.Started {
        let bound = startBound
        return try await withCheckedThrowingContinuation { continuation in
            let waiting = Locked<CheckedContinuation<Spawn.Started, any Error>?>(continuation)
            let finish: @Sendable (Result<Spawn.Started, any Error>) -> Void = { outcome in
                // A start that comes after the bound is dropped: its Child kills and reaps the worker.
                waiting.withLock { $0.take() }?.resume(with: outcome)
            }
            submit(Request(spec: spec) { finish($0.mapError { $0 }) })
            DispatchQueue.global().asyncAfter(deadline: .now() + bound.inSeconds) {
                finish(.failure(WorkerLaunchTimeout(bound: bound)))
            }
        }
    }

    private func submit(_ request: Request) {
        queue.requests.withLock { $0.pending.append(request) }
        queue.wake.signal()
    }
}

extension WorkerLauncher {
    /// Starts `spec` (standard output and error inherited, working directory "/") with one end of
    /// a new stream socket pair as its descriptor 3; returns the child and the other end, ours.
    /// Blocks (`start`).
    func startWithSocket(_ spec: ChildSpec) throws -> (child: Child, socket: Int32) {
        let (spec, ours, theirs) = try Self.withSocket(spec)
        return try Self.handOver(ours, theirs, Result { try start(spec).child })
    }

    /// The same without holding a thread.
    func startWithSocket(_ spec: ChildSpec) async throws -> (child: Child, socket: Int32) {
        let (spec, ours, theirs) = try Self.withSocket(spec)
        let started: Result<Child, any Error>
        do {
            started = .success(try await start(spec).child)
        } catch {
            started = .failure(error)
        }
        return try Self.handOver(ours, theirs, started)
    }

    private static func withSocket(_ spec: ChildSpec) throws -> (ChildSpec, ours: Int32, theirs: Int32) {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw Errno(errno)
        }
        var spec = spec
        spec.descriptors = [3: pair[1]]
        spec.standardOutput = .inherit
        spec.standardError = .inherit
        spec.workingDirectory = "/"
        return (spec, pair[0], pair[1])
    }

    /// Closes the child's end (it has its own copy; ours would hide its end from us), and ours
    /// too if the start failed.
    private static func handOver(_ ours: Int32, _ theirs: Int32, _ started: Result<Child, any Error>) throws
        -> (child: Child, socket: Int32) {
        close(theirs)
        switch started {
        case .success(let child):
            return (child, ours)
        case .failure(let error):
            close(ours)
            throw error
        }
    }
}

struct WorkerLaunchTimeout: Error, CustomStringConvertible {
    let bound: Duration
    var description: String { "the worker launcher did not start it within \(bound.inSeconds) s" }
}
