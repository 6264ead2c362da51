import VoiceboxContract
import VoiceboxCore

/// Microphone capture through PulseAudio (or pipewire-pulse): one server connection per recording.
public struct PulseCapture: AudioCapture {
    /// A server address as libpulse takes it ("unix:/run/user/0/pulse/native"); nil follows
    /// the usual rules (PULSE_SERVER, client.conf, the per-user socket).
    public var server: String?
    /// What the recording is called in volume controls.
    public var mediaName: String
    /// "a11y" is one of PulseAudio's documented roles. Never "phone": module-role-cork would
    /// cork every other stream while we listen.
    public var mediaRole: String
    /// How long `open` waits for a server that accepted the connection but does not answer.
    public var openTimeout: Duration
    /// How long `close` waits for the server to confirm the release before just hanging up.
    public var closeTimeout: Duration

    public init(server: String? = nil, mediaName: String = "Voicebox listening", mediaRole: String = "a11y",
                openTimeout: Duration = .seconds(5), closeTimeout: Duration = .seconds(1)) {
        self.server = server
        self.mediaName = mediaName
        self.mediaRole = mediaRole
        self.openTimeout = openTimeout
        self.closeTimeout = closeTimeout
    }

    public func open(source: String?) async throws -> any CaptureStream {
        try await openStream(source: source)
    }

    /// `open` with the concrete type, which also tells the server-side index.
    public func openStream(source: String?) async throws -> PulseCaptureStream {
        let recording = try PulseRecording(settings: .init(
            server: server, source: source, applicationName: "Voicebox", mediaName: mediaName,
            mediaRole: mediaRole, openTimeout: openTimeout, closeTimeout: closeTimeout))
        try await recording.start()
        return PulseCaptureStream(recording: recording, serverIndex: await recording.currentServerIndex ?? UInt32.max)
    }
}

/// A running recording. Sendable: only immutable references to Sendable things.
public final class PulseCaptureStream: CaptureStream {
    private let recording: PulseRecording
    /// The source-output's index on the server (first column of `pactl list short source-outputs`).
    public let serverIndex: UInt32

    init(recording: PulseRecording, serverIndex: UInt32) {
        self.recording = recording
        self.serverIndex = serverIndex
    }

    deinit {
        // Forgotten without close(): release the microphone anyway.
        recording.closeSoon()
    }

    public var chunks: AsyncStream<[Int16]> { recording.chunks }
    public var failure: CaptureError? { get async { await recording.currentFailure } }
    public func close() async { await recording.close() }
    public func setCorked(_ corked: Bool) async { await recording.setCorked(corked) }
}
