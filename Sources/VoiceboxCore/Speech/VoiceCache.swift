import VoiceboxContract

/// The voices of every engine, listed once in the background and answered from memory.
///
/// An empty or failed listing is never taken as the truth: it is retried with bounded
/// exponential backoff while callers wait (up to `maximumWait`) for the first real list.
/// A refresh that fails keeps the last good list.
public actor VoiceCache {
    public struct Policy: Sendable {
        /// The backoff: `voices-retry-first`, doubling up to `voices-retry-limit`.
        public var firstRetry: Duration
        public var longestRetry: Duration
        /// How long a caller waits for a first list before EngineUnavailable (voiceboxd's `--voices-wait`).
        public var maximumWait: Duration

        /// The backoff of `bounds`; callers wait up to `maximumWait`.
        public init(bounds: Bounds = Bounds(), maximumWait: Duration = .seconds(10)) {
            firstRetry = bounds[.voicesRetryFirst]
            longestRetry = bounds[.voicesRetryLimit]
            self.maximumWait = maximumWait
        }
    }

    public typealias Lister = @Sendable () async throws -> [Voice]
    public typealias Sleeper = @Sendable (Duration) async throws -> Void

    private let lister: Lister
    private let sleep: Sleeper
    private let policy: Policy
    private let onChange: @Sendable ([Voice]) -> Void
    /// Told of every new list too (the Spiel provider's voices).
    private var observers: [@Sendable ([Voice]) -> Void] = []

    private var voices: [Voice]?
    /// Answers already given, by lower-cased language: a client asking again gets them at once.
    /// At most `maximumMatches` languages, the least recently asked going first: any caller can
    /// ask for any number of well-formed tags, and memory must not grow with them.
    private var matches: [String: [Voice]] = [:]
    private var matchOrder: [String] = []
    static let maximumMatches = 32
    private var lastProblem = "the voice list has not been fetched yet"
    private var listing: Task<Void, Never>?
    /// The listing task is waiting out its backoff, not talking to the engine.
    private var sleepingBeforeRetry = false
    private var waiters: [UInt64: CheckedContinuation<[Voice]?, Never>] = [:]
    private var nextWaiter: UInt64 = 0
    /// How many listings ran: for tests and logs.
    public private(set) var attempts = 0

    public init(policy: Policy = Policy(), lister: @escaping Lister,
                sleep: @escaping Sleeper = { try await Task.sleep(for: $0) },
                onChange: @escaping @Sendable ([Voice]) -> Void = { _ in }) {
        self.policy = policy
        self.lister = lister
        self.sleep = sleep
        self.onChange = onChange
    }

    /// How many languages' answers are kept: for tests.
    public var rememberedLanguages: Int { matches.count }

    /// The cached list, or nil before the first good listing.
    public var current: [Voice]? { voices }

    /// The voices for a language, best first (see VoiceMatching), remembered until the list changes.
    public func voices(for language: String) async throws(VoiceboxError) -> [Voice] {
        let key = language.lowercased()
        if let known = matches[key] {
            if matchOrder.last != key {
                matchOrder.removeAll { $0 == key }
                matchOrder.append(key)
            }
            return known
        }
        let found = VoiceMatching.voices(try await get(), for: language)
        guard matches[key] == nil else { return found }  // another caller's answer came first
        matches[key] = found
        matchOrder.append(key)
        if matchOrder.count > Self.maximumMatches { matches[matchOrder.removeFirst()] = nil }
        return found
    }

    /// The voice to speak `language` with (`VoiceMatching.best`), from the answers remembered
    /// above: a Speak does not match thousands of voices again.
    public func best(for language: String) async throws(VoiceboxError) -> Voice? {
        if let exact = try await voices(for: language).first { return exact }
        guard let plain = VoiceMatching.plainLanguage(of: language) else { return nil }
        return try await voices(for: plain).first
    }

    /// Calls `observer` with every list that differs from the one before, after `onChange`.
    public func observe(_ observer: @escaping @Sendable ([Voice]) -> Void) {
        observers.append(observer)
    }

    /// Starts a listing now (at start-up, on RefreshVoices, when the engine comes back).
    /// A listing already running is restarted, so its backoff starts afresh.
    public func refresh() {
        listing?.cancel()
        listing = Task { await self.listUntilGood() }
    }

    /// Lists now unless a listing is already under way: for the engine coming (back), which finds a
    /// listing in its backoff sleep and starts it afresh, but never runs a second one beside the first.
    /// (speech-dispatcher serves no other client while it writes a listing: two at once held up
    /// a StopSpeaking by over a second.)
    public func refreshUnlessListing() {
        if listing != nil && !sleepingBeforeRetry { return }
        refresh()
    }

    /// The voices, waiting for a first good listing if there is none yet.
    public func get() async throws(VoiceboxError) -> [Voice] {
        if let voices { return voices }
        if listing == nil { refresh() }
        let id = nextWaiter
        nextWaiter += 1
        let timeout = Task {
            try? await sleep(policy.maximumWait)
            self.expire(id)
        }
        let result = await withCheckedContinuation { waiters[id] = $0 }
        timeout.cancel()
        guard let result else {
            throw .engineUnavailable("no voice list from speech-dispatcher within \(policy.maximumWait): \(lastProblem)")
        }
        return result
    }

    private func expire(_ id: UInt64) {
        waiters.removeValue(forKey: id)?.resume(returning: nil)
    }

    private func listUntilGood() async {
        var delay = policy.firstRetry
        while !Task.isCancelled {
            attempts += 1
            do {
                let listed = try await lister().sorted()
                guard !Task.isCancelled else { return }
                if !listed.isEmpty {
                    accept(listed)
                    return
                }
                lastProblem = "speech-dispatcher listed no voices"
            } catch {
                lastProblem = "listing voices failed: \(error)"
            }
            sleepingBeforeRetry = true
            defer { sleepingBeforeRetry = false }
            do { try await sleep(delay) } catch { return }
            delay = min(delay * 2, policy.longestRetry)
        }
    }

    private func accept(_ unordered: [Voice]) {
        // In the order of the answer for every language, which is then this list, not a copy.
        let listed = VoiceMatching.voices(unordered, for: "")
        let changed = listed != voices
        if changed {
            voices = listed
            matches = [:]
            matchOrder = []
        }
        // The same voices again keep the list already held. Taking the equal copy kept both alive (the
        // remembered answers share the old list's strings) and strewed the copy through whatever the
        // heap held at that moment.
        let current = voices ?? listed
        listing = nil
        for waiter in waiters.values { waiter.resume(returning: current) }
        waiters.removeAll()
        if changed {
            onChange(current)
            for observer in observers { observer(current) }
        }
    }
}
