import VoiceboxCore

/// The production `Synthesizer`: speech-dispatcher through libspeechd.
///
/// One speaking connection (threaded, every notification on) owned by a serial queue; libspeechd's
/// callbacks reach it through one process-wide router; a thread blocked in poll(2) notices the death
/// of the server at once; reconnection runs in the background with exponential backoff
/// (0.25 s doubling to 10 s). Voices are listed over a separate short-lived connection.
public final class SpeechDispatcherSynthesizer: Synthesizer {
    public struct Configuration: Sendable {
        /// Like `$SPEECHD_ADDRESS`: `unix_socket:/path` or `inet_socket:host:port`.
        /// nil: libspeechd's default, which honours `$SPEECHD_ADDRESS`.
        public var address: String?
        /// Whether libspeechd may start a server when none answers. With false it never does.
        public var autospawn: Bool
        /// How speech-dispatcher names this client (`SET SELF CLIENT_NAME user:clientName:…`).
        public var clientName: String

        public init(address: String? = nil, autospawn: Bool = true, clientName: String = "voicebox") {
            self.address = address
            self.autospawn = autospawn
            self.clientName = clientName
        }
    }

    public let events: AsyncStream<SynthesisEvent>
    private let core: SpeechdCore
    private let lister: VoiceLister

    /// Returns at once; connects in the background and reports `.available` (or `.unavailable`).
    public init(configuration: Configuration = Configuration()) {
        let (events, continuation) = AsyncStream.makeStream(of: SynthesisEvent.self)
        self.events = events
        core = SpeechdCore(configuration: configuration, continuation: continuation)
        lister = VoiceLister(configuration: configuration)
    }

    deinit {
        shutdown()
    }

    /// Throws `.unavailable` at once while speech-dispatcher cannot be reached (during the very first
    /// connection attempt it waits for that attempt instead).
    public func speak(_ request: SynthesisRequest) async throws {
        try await core.speak(request)
    }

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
    /// `"<module>/<name>"` (espeak-ng: 13,362 voices, about 0.3 s). Throws `.unavailable` when
    /// speech-dispatcher cannot be reached.
    public func listVoices() async throws -> [Voice] {
        try await lister.list()
    }

    /// Cancels our speech, ends every utterance with `.cancelled`, closes the connection, stops the
    /// threads and finishes `events`. Idempotent; also done on deinit.
    public func shutdown() {
        lister.close()
        core.shutdown()
    }
}
