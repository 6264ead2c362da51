import CPulse
import Dispatch
import VoiceboxCore

/// PulseMixer's one long-lived server connection: a threaded mainloop (thread "voicebox-mixer")
/// with one context at a time, replaced by a fresh one whenever the server goes away.
///
/// Threads: libpulse calls back on the mainloop thread with the mainloop lock held; those
/// callbacks update the state below and hand results off at once (continuations, `eventSink`).
/// Timers (request and connect timeouts, reconnect backoff) run on `queue` and take the lock.
///
/// `@unchecked Sendable` is safe because every `var` below is read and written only while holding
/// the threaded mainloop's lock: in libpulse callbacks (lock held by libpulse) or inside
/// `withLock` (never on the mainloop thread, where it would deadlock; see `shutdown`). The `let`s
/// are Sendable or C handles whose functions are thread-safe (`mainloop`: its lock/stop). The
/// mainloop, and so the lock, lives until `deinit`, which runs only after its thread was joined.
final class MixerConnection: @unchecked Sendable {
    struct Settings: Sendable {
        var server: String?
        var applicationName: String
        /// Bound on each request's answer (lists, info, mute, volume, trigger start and stop).
        var requestTimeout: Duration
        /// Bound on one connection attempt, from connect to subscribed.
        var connectTimeout: Duration
    }

    enum Phase { case connecting, ready, waitingToRetry, ended }

    let settings: Settings
    let events: AsyncStream<MixerEvent>
    let eventSink: AsyncStream<MixerEvent>.Continuation
    let mainloop: OpaquePointer
    let queue = DispatchQueue(label: "voicebox.pulse.mixer")

    // Guarded by the mainloop lock (see above).
    var phase = Phase.connecting
    var context: OpaquePointer?
    /// Numbers connection attempts, so that a timer set for one leaves a later one alone.
    var attempt = 0
    var backoff = ReconnectBackoff()
    /// Why the server cannot be reached now; what callers get while we wait to retry.
    var lastFailure = "not connected yet"
    /// `.serverLost` was yielded and no `.serverReady` since: retries that fail say nothing more.
    var lostReported = false
    var nextID: UInt64 = 0
    var readyWaiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
    var pending: [UInt64: any PendingRequest] = [:]
    /// `serverInfo` as last read; nil after a module or server event, or a new connection.
    var cachedInfo: SoundServerInfo?
    /// Counts what invalidates `cachedInfo`, so an answer that raced with a change is not kept.
    var infoGeneration = 0
    var trigger: CorkTrigger?
    /// Keeps this object alive while the mainloop thread may call back into it; the pointer is
    /// the user data of the context's callbacks. Released on `queue` after the mainloop stopped.
    var selfRetain: Unmanaged<MixerConnection>?

    init(settings: Settings) throws {
        guard let mainloop = pa_threaded_mainloop_new() else {
            throw MixerError.failed("cannot create a PulseAudio mainloop")
        }
        pa_threaded_mainloop_set_name(mainloop, "voicebox-mixer")
        self.mainloop = mainloop
        self.settings = settings
        // Events come a few at a time; a reader that fell thousands behind is gone, not slow.
        (events, eventSink) = AsyncStream.makeStream(of: MixerEvent.self, bufferingPolicy: .bufferingNewest(4096))
    }

    deinit {
        // Only reachable after `end` stopped (joined) the mainloop on `queue`.
        pa_threaded_mainloop_free(mainloop)
    }

    /// Starts the mainloop thread and the first connection attempt; returns at once.
    func start() throws {
        guard pa_threaded_mainloop_start(mainloop) >= 0 else {
            throw MixerError.failed("cannot start the PulseAudio mainloop thread")
        }
        withLock {
            selfRetain = Unmanaged.passRetained(self)
            connect()
        }
    }

    /// Ends the connection for good; safe from any thread and more than once.
    func shutdown() {
        // From a libpulse callback the lock is already held (and taking it would abort).
        if pa_threaded_mainloop_in_thread(mainloop) != 0 { return end() }
        withLock { end() }
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        return try body()
    }

    /// Lock held. A fresh number for a waiter or request.
    func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// The user data of the context's callbacks; nil once ended.
    var selfPointer: UnsafeMutableRawPointer? { selfRetain?.toOpaque() }

    static func owner(_ user: UnsafeMutableRawPointer?) -> MixerConnection {
        Unmanaged<MixerConnection>.fromOpaque(user!).takeUnretainedValue()
    }

    /// libpulse's text for an error code; `pa_strerror` gives NULL for codes it does not know.
    static func describe(_ code: Int32) -> String {
        pa_strerror(code).map { String(cString: $0) } ?? "PulseAudio error \(code)"
    }

    /// The caller frees the result with `pa_proplist_free`.
    static func proplist(_ entries: [String: String]) -> OpaquePointer {
        let list = pa_proplist_new()!
        for (key, value) in entries { pa_proplist_sets(list, key, value) }
        return list
    }
}
