import VoiceboxContract
import VoiceboxCore

/// The production `Synthesizer`: speech-dispatcher, spoken to in SSIP directly.
///
/// One speaking connection (every notification on) driven by readiness on a serial queue that owns
/// all state; every reply is bounded by `speechd-reply`; a lost or wedged server ends the utterances
/// in flight with `.error` and reconnection runs in the background with exponential backoff
/// (`speechd-reconnect-first` doubling to `speechd-reconnect-limit`). Voices are listed over a
/// separate short-lived connection. Every wait and delay is one of `Configuration.bounds`.
public final class SpeechDispatcherSynthesizer: Synthesizer {
    public struct Configuration: Sendable {
        /// Like `$SPEECHD_ADDRESS`: `unix_socket:/path` or `inet_socket:host:port`.
        /// nil: libspeechd's default (`$SPEECHD_ADDRESS`, then the user's runtime directory).
        public var address: String?
        /// Whether to start a server (`speech-dispatcher --spawn`) when none answers. With false it never does.
        public var autospawn: Bool
        /// How speech-dispatcher names this client (`SET SELF CLIENT_NAME user:clientName:…`).
        public var clientName: String
        /// Every wait on speech-dispatcher and every delay (the `speechd-*` bounds; voiceboxd's
        /// `--bound`). `speechd-reply` is how long speech-dispatcher may take to answer one command:
        /// a server that does not answer in time fails the waiting caller, and the connection is
        /// dropped and made again. The voice listing (a reply of about 483 KB for espeak-ng) has
        /// `speechd-list` instead, for the silence between two reads (see VoiceLister).
        public var bounds: Bounds
        /// What to do with a server that stops speaking or answering (see SpeechdCore+Recovery).
        public var recovery: Recovery
        /// Where to say what recovery does (voiceboxd's log).
        public var log: (@Sendable (String) -> Void)?
        /// How long the stall probe waits for the module's voice list (see SpeechdProbe.health);
        /// `speechd-reply` when nil. Tests shorten it to see what a slow list means.
        public var probeTimeout: Double?

        public init(address: String? = nil, autospawn: Bool = true, clientName: String = "voicebox",
                    bounds: Bounds = Bounds(), recovery: Recovery = .restart, log: (@Sendable (String) -> Void)? = nil) {
            self.address = address
            self.autospawn = autospawn
            self.clientName = clientName
            self.bounds = bounds
            self.recovery = recovery
            self.log = log
        }
    }

    /// What recovery may do to a speech-dispatcher that stopped speaking or answering.
    public enum Recovery: String, Sendable, CaseIterable {
        /// Restart it (TERM, then KILL, and start it again as it was started) if it runs as this
        /// user, then connect again.
        case restart
        /// Only connect again: someone else looks after the server.
        case reconnect
    }

    public let events: AsyncStream<SynthesisEvent>
    private let core: SpeechdCore
    private let lister: VoiceLister

    /// Returns at once; connects in the background and reports `.available` (or `.unavailable`).
    public init(configuration: Configuration = Configuration()) {
        let (events, continuation) = AsyncStream.makeStream(of: SynthesisEvent.self)
        self.events = events
        let timings = SpeechdTimings(configuration.bounds)
        core = SpeechdCore(configuration: configuration, timings: timings, continuation: continuation)
        lister = VoiceLister(configuration: configuration, timings: timings)
    }

    deinit {
        shutdown()
    }

    /// Throws `.unavailable` at once while speech-dispatcher cannot be reached (during the very first
    /// connection attempt it waits for that attempt instead).
    public func speak(_ request: SynthesisRequest) async throws {
        try await core.speak(request)
    }

    /// Never waits on speech-dispatcher: the utterances end with `.cancelled` at once and the command
    /// is queued.
    public func stop(_ ids: [UInt64]) async {
        await core.stop(ids)
    }

    /// Takes our messages back from speech-dispatcher and holds new ones until `resume()`; the one
    /// being spoken starts over on resume. (speech-dispatcher 0.11's own PAUSE wedges the server.)
    public func pause() async throws {
        await core.pause()
    }

    public func resume() async throws {
        await core.resume()
    }

    /// Every voice of every output module, over a separate short-lived connection: ids are
    /// `"<module>/<name>"` (espeak-ng alone lists thousands). Throws `.unavailable` when
    /// speech-dispatcher cannot be reached.
    public func listVoices() async throws -> [Voice] {
        try await lister.list()
    }

    /// Cancels our speech, ends every utterance with `.cancelled`, closes the connection and
    /// finishes `events`. Idempotent; also done on deinit.
    public func shutdown() {
        lister.close()
        core.shutdown()
    }
}
