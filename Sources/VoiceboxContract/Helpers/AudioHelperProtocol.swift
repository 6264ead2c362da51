/// # The audio helper protocol, version 1: the boundary between the service and the sound server
///
/// voiceboxd does not link libpulse: libpulse brings libsndfile (and more) into any process that
/// uses it, and the service maps no audio-file library. `voicebox-audio`, one long-lived helper
/// process, holds the sound-server connections instead: the mixer (streams, mute, volume, the
/// server's memory, the cork trigger) and every microphone recording. The service's side is
/// `AudioHelper` (module VoiceboxWorkers), which offers them as `AudioMixer` and `AudioCapture`.
///
/// ## Starting
/// `voicebox-audio --parent PID`
/// - descriptor 3: one end of a stream socket pair; the service holds the other.
/// - standard output and error: diagnostics only (the service's log).
/// - environment: the service's (libpulse finds the server through it), plus
///   `PULSE_PROP_application.process.id=PID`: the streams it opens are the service's, so the
///   audio session tells them from others' by the service's pid, and volume controls show it.
/// - It dies with the service (PR_SET_PDEATHSIG) and exits at once if its parent is already
///   another process. It ends when the service closes its end of the socket.
///
/// ## Frames
/// Both ways: a tag byte, a payload length (UInt32, little-endian, at most `maximumPayload`) and
/// the payload. JSON payloads are the Codable shapes of the types named (`JSON`).
///
/// Service → helper:
/// - `R` request: `Request` (an id chosen by the service, and the `Call`). Each is answered by
///   exactly one `A` with its id, in any order: the helper works on requests concurrently.
///
/// Helper → service:
/// - `A` answer: `Answer` (the request's id and its `Outcome`).
/// - `M` mixer event: a `MixerEvent`, in the order the server reported them. The first,
///   `serverReady`, comes once the helper has connected.
/// - `S` samples: a capture's id (UInt32, little-endian), then 16 kHz mono signed 16-bit
///   little-endian samples.
/// - `X` capture ended: `CaptureEnd`. Comes once per opened capture, after its last samples:
///   after a `closeCapture`, or when the recording failed by itself.
///
/// ## Bounds and ends
/// The helper bounds its own waits on the server (2 s to connect, 2 s an answer, 5 s to open a
/// recording, 1 s to close one). The service's bounds are voiceboxd's `Bound` helper-* (standard
/// values here; `voiceboxd --bound` sets them): it waits at most 8 s for any answer but a close's
/// (2 s); a helper that does not answer in that time, or that ends, is killed and reaped and a new
/// one started (after 0.1 s, doubling to 5 s while they keep failing). Its recordings fail with
/// `serverUnavailable` naming how it ended; the mixer's calls meanwhile fail with `unavailable`,
/// and the new helper's `serverReady` makes the audio session read the server afresh. Any call waits up
/// to 6 s for the replacement of a helper that ended (1 s while none can be started), and a mixer
/// call whose helper was lost is asked again of the replacement: each is idempotent, and what the
/// session changed must be given back. While a recording is open the
/// service sends `ping` every 2 s, bounded by 2 s: a stopped helper sends no samples, and nothing
/// else would notice it. While nothing is recording, a stopped helper is found by the next call.
public enum AudioHelperProtocol {
    public static let version = 1
    public static let executableName = "voicebox-audio"

    public enum Tag: UInt8, Sendable {
        case request = 0x52        // R
        case answer = 0x41         // A
        case mixerEvent = 0x4D     // M
        case samples = 0x53        // S
        case captureEnded = 0x58   // X
    }

    /// The longest the helper waits to hand a frame to the service (the service's own is helper-write).
    public static let writeBound: Duration = .seconds(2)
    /// A frame holds at most this many bytes of payload.
    public static let maximumPayload = 1 << 22

    public struct Request: Codable, Sendable {
        public var id: UInt32
        public var call: Call
        public init(id: UInt32, call: Call) {
            self.id = id
            self.call = call
        }
    }

    /// `AudioMixer`'s and `AudioCapture`'s calls, one to one.
    public enum Call: Codable, Sendable {
        case serverInfo
        case playbackStreams
        case recordingStreams
        case setMute(stream: UInt32, muted: Bool)
        case setVolume(stream: UInt32, volume: [UInt32])
        case rememberedSettings
        case remember([RememberedSetting])
        case heldAsGiven([RememberedSetting])
        case forgetRemembered([String])
        case startCorkTrigger(role: String)
        case stopCorkTrigger
        /// Starts recording from `source` (nil: the default source), as capture `capture`.
        case openCapture(capture: UInt32, source: String?)
        case setCaptureCorked(capture: UInt32, corked: Bool)
        /// Releases the microphone; answered once the server no longer records for it. A close
        /// that arrives while the capture is still opening closes it as soon as it is open.
        case closeCapture(capture: UInt32)
        /// Answered `done` at once: the service asks every 2 s while a recording is open, so that
        /// a stopped helper (which sends no samples) is found and replaced.
        case ping
    }

    public struct Answer: Codable, Sendable {
        public var id: UInt32
        public var outcome: Outcome
        public init(id: UInt32, outcome: Outcome) {
            self.id = id
            self.outcome = outcome
        }
    }

    public enum Outcome: Codable, Sendable {
        case done
        case serverInfo(SoundServerInfo)
        case playbackStreams([PlaybackStream])
        case recordingStreams([RecordingStream])
        case rememberedSettings([RememberedSetting])
        /// Names of memory entries (`heldAsGiven`).
        case names([String])
        /// A stream's index on the server (the cork trigger's).
        case index(UInt32)
        case mixerError(MixerError)
        case captureError(CaptureError)
        /// The helper could not read the request (a bug on one side, never a caller's doing).
        case badRequest(String)
    }

    public struct CaptureEnd: Codable, Sendable {
        public var capture: UInt32
        /// Why the recording ended by itself; nil after a close.
        public var failure: CaptureError?
        public init(capture: UInt32, failure: CaptureError?) {
            self.capture = capture
            self.failure = failure
        }
    }

    /// One frame, encoded.
    public static func frame(_ tag: Tag, _ payload: [UInt8]) -> [UInt8] {
        precondition(payload.count <= maximumPayload)
        return payload.withUnsafeBytes { FrameReader.frame(tag: tag.rawValue, $0) }
    }

    /// A JSON frame. The types above always encode.
    public static func frame(_ tag: Tag, json value: some Encodable) -> [UInt8] {
        frame(tag, (try? JSON.encode(value)) ?? [])
    }

    public static func samplesFrame(capture: UInt32, _ samples: [Int16]) -> [UInt8] {
        var payload = [UInt8]()
        payload.reserveCapacity(4 + 2 * samples.count)
        withUnsafeBytes(of: capture.littleEndian) { payload.append(contentsOf: $0) }
        samples.map(\.littleEndian).withUnsafeBytes { payload.append(contentsOf: $0) }
        return frame(.samples, payload)
    }

    /// A samples frame's capture id and samples; nil for a malformed payload.
    public static func samples(fromPayload payload: [UInt8]) -> (capture: UInt32, samples: [Int16])? {
        guard payload.count >= 4, let samples = WorkerProtocol.samples(fromPayload: payload.dropFirst(4)) else { return nil }
        var capture: UInt32 = 0
        for index in 0..<4 { capture |= UInt32(payload[index]) << (8 * UInt32(index)) }
        return (capture, samples)
    }
}
