import VoiceboxContract

/// Renderings waiting for and holding an engine, shared fairly among callers: each caller has at
/// most `perCaller` renderings at once (rendering, or written from memory as its reader takes them)
/// and the service at most `running` engines; the next to start is taken from the callers in turn,
/// so a caller with many queued holds up only itself. An engine is held until it has rendered the
/// utterance into a bounded buffer (`RenderPump.bufferBytes`), not until the reader has read it:
/// a caller that does not read its pipes holds its own buffers, never another caller's engine.
/// `waitingInAll` bounds the renderings waiting across callers (each holds a caller's descriptor).
public actor RenderQueue {
    public struct Limits: Sendable {
        public var perCaller = 4
        public var running = 16
        /// A caller's renderings waiting to start; more is Busy.
        public var waitingPerCaller = 64
        /// All callers' renderings waiting to start (each holds a descriptor: voiceboxd raises its
        /// own limit to the hard one); more is Busy.
        public var waitingInAll = 4096
        public init() {}
    }

    public struct Job: Sendable {
        public let request: RenderRequest
        public let target: RenderTarget
        public let caller: String
        public let events: @Sendable (RenderEvent) -> Void

        public init(_ request: RenderRequest, into target: RenderTarget, caller: String,
                    events: @escaping @Sendable (RenderEvent) -> Void) {
            self.request = request
            self.target = target
            self.caller = caller
            self.events = events
        }
    }

    private struct Running {
        let caller: String
        let handle: any RenderHandle
        /// Its engine has rendered it all: it counts for its caller, not against `running`.
        var engineReleased = false
    }

    private let renderer: any SpeechRenderer
    private let limits: Limits
    private var waiting: [String: [(ticket: UInt64, job: Job)]] = [:]
    /// Callers with waiting jobs, the next to be served first.
    private var turn: [String] = []
    private var running: [UInt64: Running] = [:]
    private var nextTicket: UInt64 = 1

    public init(renderer: any SpeechRenderer, limits: Limits = .init()) {
        self.renderer = renderer
        self.limits = limits
    }

    /// Queues `job`; returns its ticket (for `cancel`). Busy when the caller already has
    /// `waitingPerCaller` waiting: its target is closed then.
    public func submit(_ job: Job) throws(VoiceboxError) -> UInt64 {
        guard waiting[job.caller, default: []].count < limits.waitingPerCaller else {
            job.target.descriptor.close()
            throw .init(.busy, "\(limits.waitingPerCaller) renderings of this caller are waiting already")
        }
        guard counts.waiting < limits.waitingInAll else {
            job.target.descriptor.close()
            throw .init(.busy, "\(limits.waitingInAll) renderings are waiting already")
        }
        let ticket = nextTicket
        nextTicket += 1
        if waiting[job.caller] == nil { turn.append(job.caller) }
        waiting[job.caller, default: []].append((ticket, job))
        startWhatMay()
        return ticket
    }

    /// Stops a rendering, started or waiting; one already over is no error.
    public func cancel(_ ticket: UInt64) {
        if let running = running[ticket] { return running.handle.cancel() }
        for (caller, jobs) in waiting {
            guard let index = jobs.firstIndex(where: { $0.ticket == ticket }) else { continue }
            let job = jobs[index].job
            remove(at: index, of: caller)
            job.target.descriptor.close()
            job.events(.finished(.cancelled))
            return
        }
    }

    /// How many are rendering, and waiting: for tests and the bench.
    public var counts: (running: Int, waiting: Int) { (running.count, waiting.values.reduce(0) { $0 + $1.count }) }

    private func startWhatMay() {
        while running.values.count(where: { !$0.engineReleased }) < limits.running,
              let caller = turn.first(where: { caller in running.values.count(where: { $0.caller == caller }) < limits.perCaller }) {
            let (ticket, job) = waiting[caller]![0]
            remove(at: 0, of: caller)
            if waiting[caller] != nil {  // it has more: to the back of the line
                turn.removeAll { $0 == caller }
                turn.append(caller)
            }
            let events = job.events
            let handle = renderer.render(job.request, into: job.target) { [weak self] event in
                events(event)
                switch event {
                case .finished: Task { await self?.finished(ticket) }
                case .engineReleased: Task { await self?.released(ticket) }
                default: break
                }
            }
            running[ticket] = Running(caller: caller, handle: handle)
        }
    }

    private func released(_ ticket: UInt64) {
        guard running[ticket] != nil else { return }
        running[ticket]?.engineReleased = true
        startWhatMay()
    }

    private func finished(_ ticket: UInt64) {
        guard running.removeValue(forKey: ticket) != nil else { return }
        startWhatMay()
    }

    private func remove(at index: Int, of caller: String) {
        waiting[caller]?.remove(at: index)
        if waiting[caller]?.isEmpty == true {
            waiting[caller] = nil
            turn.removeAll { $0 == caller }
        }
    }
}
