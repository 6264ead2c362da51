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
        let result = Locked<Result<Spawn.Started, SpawnError>?>(nil)
        let done = DispatchSemaphore(value: 0)
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
                let result = Result { () throws(SpawnError) in try Spawn.start(request.spec) }
                request.result.withLock { $0 = result }
                request.done.signal()
            }
        }
    }

    deinit {
        queue.requests.withLock { $0.closed = true }
        queue.wake.signal()
    }

    /// Starts `spec` on the launching thread; waits at most `startBound` for it.
    func start(_ spec: ChildSpec) throws -> Spawn.Started {
        let request = Request(spec: spec)
        queue.requests.withLock { $0.pending.append(request) }
        queue.wake.signal()
        guard request.done.wait(timeout: .now() + startBound.inSeconds) == .success else {
            // The start may still come; its Child kills and reaps the worker when dropped.
            throw WorkerLaunchTimeout(bound: startBound)
        }
        return try request.result.withLock { $0 }!.get()
    }
}

extension WorkerLauncher {
    /// Starts `spec` (standard output and error inherited, working directory "/") with one end of
    /// a new stream socket pair as its descriptor 3; returns the child and the other end, ours.
    func startWithSocket(_ spec: ChildSpec) throws -> (child: Child, socket: Int32) {
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &pair) == 0 else {
            throw Errno(errno)
        }
        var spec = spec
        spec.descriptors = [3: pair[1]]
        spec.standardOutput = .inherit
        spec.standardError = .inherit
        spec.workingDirectory = "/"
        do {
            let child = try start(spec).child
            close(pair[1])  // the child has its own copy; ours would hide its end from us
            return (child, pair[0])
        } catch {
            close(pair[0])
            close(pair[1])
            throw error
        }
    }
}

struct WorkerLaunchTimeout: Error, CustomStringConvertible {
    let bound: Duration
    var description: String { "the worker launcher did not start it within \(bound.inSeconds) s" }
}
