import CPulse
import Dispatch
import VoiceboxContract
import VoiceboxCore

/// PulseMixer's one long-lived server connection: a threaded mainloop (thread "voicebox-mixer")
/// with one context at a time, replaced by a fresh one whenever the server goes away.
///
/// Threads: an actor on a `MainloopExecutor`, so its state is checked by the compiler and guarded
/// by the threaded mainloop's lock. libpulse calls back on the mainloop thread with that lock held;
/// those callbacks enter the actor with `fromCallback` and hand results off at once (continuations,
/// `eventSink`). Timers (request and connect timeouts, reconnect backoff) fire on the executor's
/// queue and enter it with `soon`. Stopping the mainloop (never under the lock) runs there too,
/// outside the actor.
actor MixerConnection: MainloopActor {
    struct Settings: Sendable {
        var server: String?
        var applicationName: String
        /// Bound on each request's answer (lists, info, mute, volume, trigger start and stop).
        var requestTimeout: Duration
        /// Bound on one connection attempt, from connect to subscribed.
        var connectTimeout: Duration
        /// Bound on WirePlumber taking up a stream-memory entry written through pipewire-pulse
        /// (`remember`): it does so on its own time, over 2 s on a loaded machine (seen in CI).
        var memoryTakeUpTimeout: Duration = .seconds(5)
    }

    enum Phase { case connecting, ready, waitingToRetry, ended }

    nonisolated let settings: Settings
    nonisolated let events: AsyncStream<MixerEvent>
    nonisolated let eventSink: AsyncStream<MixerEvent>.Continuation
    nonisolated let executor: MainloopExecutor

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
        do {
            executor = try MainloopExecutor(name: "voicebox-mixer", label: "voicebox.pulse.mixer")
        } catch {
            throw MixerError.failed("cannot create a PulseAudio mainloop")
        }
        self.settings = settings
        // Events come a few at a time; a reader that fell thousands behind is gone, not slow.
        (events, eventSink) = AsyncStream.makeStream(of: MixerEvent.self, bufferingPolicy: .bufferingNewest(4096))
    }

    /// Starts the mainloop thread and the first connection attempt; returns at once.
    nonisolated func start() throws {
        guard executor.start() else {
            throw MixerError.failed("cannot start the PulseAudio mainloop thread")
        }
        now { connection in
            connection.selfRetain = Unmanaged.passRetained(connection)
            connection.connect()
        }
    }

    /// Ends the connection for good; safe from any thread and more than once.
    nonisolated func shutdown() {
        now { $0.end() }
    }

    /// A fresh number for a waiter or request.
    func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// The user data of the context's callbacks; nil once ended.
    var selfPointer: UnsafeMutableRawPointer? { selfRetain?.toOpaque() }

    nonisolated static func owner(_ user: UnsafeMutableRawPointer?) -> MixerConnection {
        Unmanaged<MixerConnection>.fromOpaque(user!).takeUnretainedValue()
    }

    /// libpulse's text for an error code; `pa_strerror` gives NULL for codes it does not know.
    nonisolated static func describe(_ code: Int32) -> String {
        pa_strerror(code).map { String(cString: $0) } ?? "PulseAudio error \(code)"
    }

    /// The caller frees the result with `pa_proplist_free`.
    nonisolated static func proplist(_ entries: [String: String]) -> OpaquePointer {
        let list = pa_proplist_new()!
        for (key, value) in entries { pa_proplist_sets(list, key, value) }
        return list
    }
}
