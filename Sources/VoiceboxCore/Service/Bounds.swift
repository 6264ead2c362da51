/// Every bound voiceboxd puts on a wait for another process, and every delay it keeps, named once
/// with its standard value and why it is that long. `voiceboxd --bound NAME=SECONDS` (repeatable)
/// sets one: the tests set the ones they are about small, so that they see a bound pass, and what
/// follows, without waiting for the standard one (docs/testing.md). The standard values are the
/// service's promise, listed in voiceboxd's `--help`, docs/architecture.md and voiceboxd(8).
public enum Bound: String, CaseIterable, Sendable {
    // speech-dispatcher (VoiceboxSpeechd)
    case speechdReply = "speechd-reply"
    case speechdAccept = "speechd-accept"
    case speechdBegin = "speechd-begin"
    case speechdStallLimit = "speechd-stall-limit"
    case speechdHeartbeat = "speechd-heartbeat"
    case speechdReconnectFirst = "speechd-reconnect-first"
    case speechdReconnectLimit = "speechd-reconnect-limit"
    case speechdRestartFirst = "speechd-restart-first"
    case speechdRestartLimit = "speechd-restart-limit"
    case speechdStart = "speechd-start"
    case speechdStopGrace = "speechd-stop-grace"
    case speechdExit = "speechd-exit"
    case speechdRestartReset = "speechd-restart-reset"
    case speechdEagerRetry = "speechd-eager-retry"
    case speechdList = "speechd-list"
    // The voice list (VoiceCache)
    case voicesRetryFirst = "voices-retry-first"
    case voicesRetryLimit = "voices-retry-limit"
    // voicebox-audio, the sound-server helper (AudioHelper)
    case helperAnswer = "helper-answer"
    case helperClose = "helper-close"
    case helperWrite = "helper-write"
    case helperPing = "helper-ping"
    case helperReplacement = "helper-replacement"
    case helperStartFailed = "helper-start-failed"
    case helperRestartFirst = "helper-restart-first"
    case helperRestartLimit = "helper-restart-limit"
    case helperRestartReset = "helper-restart-reset"
    // The audio session (AudioSession, MPRIS players)
    case memoryCheckFirst = "memory-check-first"
    case playerAnswer = "player-answer"
    case grace = "grace"
    case callLimit = "call-limit"
    case serverRestoreWindow = "server-restore-window"
    case memorySettle = "memory-settle"
    // The voice list and the recognition models (Daemon)
    case voicesWait = "voices-wait"
    case modelIdle = "model-idle"
    // Recognition workers (voicebox-worker)
    case workerStart = "worker-start"
    case workerModelLoad = "worker-model-load"
    case workerAnswer = "worker-answer"
    case fileWorkerHeader = "file-worker-header"
    case fileWorkerAnswer = "file-worker-answer"
    case workerReap = "worker-reap"
    case workerEnd = "worker-end"
    case workerCancel = "worker-cancel"
    // speech-dispatcher's output modules, rendering into memory (OutputModules, issue 40)
    case moduleStart = "module-start"
    case moduleReply = "module-reply"
    case moduleSilence = "module-silence"
    case moduleReader = "module-reader"
    case moduleExit = "module-exit"
    case moduleSpareIdle = "module-spare-idle"
    case moduleSpareUnused = "module-spare-unused"
    case moduleProbeAgain = "module-probe-again"
    // voiceboxd's own (Daemon)
    case busCall = "bus-call"
    case providerVoices = "provider-voices"
    case memoryTrim = "memory-trim"
    // Callers' streams (RecognitionRun)
    case streamPark = "stream-park"
    case streamRelease = "stream-release"
    case streamHold = "stream-hold"
    case streamHoldInSpeech = "stream-hold-in-speech"
    case streamCut = "stream-cut"
    case streamTurn = "stream-turn"
    // Long files (RecognitionRun+LongFile): a length of audio, not a wait
    case filePart = "file-part"

    /// The value voiceboxd uses unless told otherwise.
    public var standard: Duration {
        switch self {
        case .speechdReply: .seconds(2)
        case .speechdAccept: .milliseconds(250)
        case .speechdBegin: .seconds(3)
        case .speechdStallLimit: .seconds(30)
        case .speechdHeartbeat: .seconds(3)
        case .speechdReconnectFirst: .milliseconds(250)
        case .speechdReconnectLimit: .seconds(10)
        case .speechdRestartFirst: .seconds(1)
        case .speechdRestartLimit: .seconds(30)
        case .speechdStart: .seconds(20)
        case .speechdStopGrace: .milliseconds(500)
        case .speechdExit: .seconds(2)
        case .speechdRestartReset: .seconds(60)
        case .speechdEagerRetry: .seconds(1)
        case .speechdList: .seconds(10)
        case .voicesRetryFirst: .milliseconds(250)
        case .voicesRetryLimit: .seconds(10)
        case .helperAnswer: .seconds(8)
        case .helperClose: .seconds(2)
        case .helperWrite: .seconds(2)
        case .helperPing: .seconds(2)
        case .helperReplacement: .seconds(6)
        case .helperStartFailed: .seconds(1)
        case .helperRestartFirst: .milliseconds(100)
        case .helperRestartLimit: .seconds(5)
        case .helperRestartReset: .seconds(10)
        case .memoryCheckFirst: .seconds(1)
        case .playerAnswer: .milliseconds(500)
        case .grace: .milliseconds(300)
        case .callLimit: .seconds(10)
        case .serverRestoreWindow: .seconds(2)
        case .memorySettle: .milliseconds(300)
        case .voicesWait: .seconds(10)
        case .modelIdle: .seconds(15)
        case .workerStart: .seconds(5)
        case .workerModelLoad: .seconds(15)
        case .workerAnswer: .seconds(10)
        case .fileWorkerHeader: .seconds(5)
        case .fileWorkerAnswer: .seconds(3)
        case .workerReap: .seconds(1)
        case .workerEnd: .seconds(2)
        case .workerCancel: .milliseconds(250)
        case .moduleStart: .seconds(10)
        case .moduleReply: .seconds(5)
        case .moduleSilence: .seconds(10)
        case .moduleReader: .seconds(60)
        case .moduleExit: .milliseconds(500)
        case .moduleSpareIdle: .seconds(300)
        case .moduleSpareUnused: .seconds(15)
        case .moduleProbeAgain: .seconds(60)
        case .busCall: .seconds(2)
        case .providerVoices: .seconds(15)
        case .memoryTrim: .milliseconds(500)
        case .streamPark: .milliseconds(250)
        case .streamRelease: .seconds(2)
        case .streamHold: .seconds(1)
        case .streamHoldInSpeech: .seconds(5)
        case .streamCut: .seconds(2)
        case .streamTurn: .seconds(1)
        case .filePart: .seconds(60)
        }
    }

    /// One line: what waits this long, and for what.
    public var summary: String {
        switch self {
        case .speechdReply: "speech-dispatcher's answer to a command"
        case .speechdAccept: "Speak's reply while speech-dispatcher has not yet taken the text (it is queued meanwhile)"
        case .speechdBegin: "an utterance to begin, or to make progress, before speech-dispatcher is checked for a stall"
        case .speechdStallLimit: "the longest a growing stall check waits while the output module still answers"
        case .speechdHeartbeat: "how often an idle connection to speech-dispatcher is checked"
        case .speechdReconnectFirst: "the first pause before connecting to speech-dispatcher again (it doubles)"
        case .speechdReconnectLimit: "the longest pause between connection attempts"
        case .speechdRestartFirst: "the first pause before restarting a wedged speech-dispatcher again (it doubles)"
        case .speechdRestartLimit: "the longest pause between restarts"
        case .speechdStart: "a speech-dispatcher started by voiceboxd to be ready"
        case .speechdStopGrace: "a wedged speech-dispatcher to exit after TERM before it is killed (its output modules are killed at once)"
        case .speechdExit: "a killed speech-dispatcher and its output modules to be gone"
        case .speechdRestartReset: "how long a restarted speech-dispatcher must stay up for its next restart to wait only speechd-restart-first"
        case .speechdEagerRetry: "a Speak while speech-dispatcher is unreachable connects again at once if the last attempt is older than this"
        case .speechdList: "each answer on the voice-listing connection (a list comes only once speech-dispatcher has built all of it: 1-2.5 s for espeak-ng's 13,000 voices)"
        case .voicesRetryFirst: "the first pause before listing voices again after an empty or failed listing (it doubles)"
        case .voicesRetryLimit: "the longest pause between voice listings"
        case .helperAnswer: "voicebox-audio's answer to any request (above its own 2 s bounds on the server)"
        case .helperClose: "voicebox-audio to close a recording"
        case .helperWrite: "a request to be taken by voicebox-audio"
        case .helperPing: "how often voicebox-audio is pinged while it records, and how long its answer may take"
        case .helperReplacement: "a call's wait for a replacement voicebox-audio (above helper-restart-limit and a start)"
        case .helperStartFailed: "a call's wait for voicebox-audio while the last one could not be started at all"
        case .helperRestartFirst: "the first pause before starting a replacement voicebox-audio (it doubles while they keep failing)"
        case .helperRestartLimit: "the longest pause between replacements of voicebox-audio"
        case .helperRestartReset: "how long a voicebox-audio must run for the next replacement to wait only helper-restart-first"
        case .memoryCheckFirst: "the first look again at a memory put-back the server had not listed (then 2, 4 … 60 times this)"
        case .playerAnswer: "an MPRIS player's answer to Pause, Play or a status read"
        case .grace: "others stay interrupted this long after the last utterance or recognition (a delay; also --grace)"
        case .callLimit: "a microphone recognition held by a call this long ends, reason interrupted (also --call-limit)"
        case .serverRestoreWindow: "a change to a stream this young is the sound server applying its memory, not the user"
        case .memorySettle: "quiet after our last change to a stream before its memory entry is written again (pipewire-pulse)"
        case .voicesWait: "ListVoices's wait for a first voice list before EngineUnavailable (also --voices-wait)"
        case .modelIdle: "a recognition model unused this long is freed (a delay; also --model-idle)"
        case .workerStart: "a recognition worker to start and confine itself"
        case .workerModelLoad: "a decoder worker to load its model"
        case .workerAnswer: "a decoder worker's answer, plus 10 times the audio it was sent"
        case .fileWorkerHeader: "a file worker to read a file's header"
        case .fileWorkerAnswer: "each later message of a file worker"
        case .workerReap: "a worker, voicebox-audio or an output module the service is done with to end before it is killed"
        case .workerEnd: "a recognition worker that broke off to end, so that the error names how it ended"
        case .workerCancel: "a cancelled recognition's decoder worker to answer before it is killed"
        case .moduleStart: "an output module to start and answer INIT (sd_espeak-ng: 20-50 ms)"
        case .moduleReply: "an output module's answer to SET, SPEAK, AUDIO"
        case .moduleSilence: "an output module rendering to send more, while its reader waits for it"
        case .moduleReader: "a reader that takes nothing while its rendering, read ahead as far as it may, holds an output module"
        case .moduleExit: "an output module that closed its output to end, so that the error names how it ended"
        case .moduleSpareIdle: "spare output modules nobody took since the last rendering are let go after this (an idle service holds none)"
        case .moduleSpareUnused: "spare output modules started at start-up, before any rendering, are let go after this if none is taken"
        case .moduleProbeAgain: "an output module whose probe failed is probed again when asked after this"
        case .busCall: "the bus daemon's answer (taking our names, a caller's process, whether a caller is still there), and the notification daemon's (--notify-microphone)"
        case .providerVoices: "the Spiel provider's name waits this long for a first voice list"
        case .memoryTrim: "quiet on the bus before what the calls freed is given back to the system (a delay, not a wait)"
        case .streamPark: "a stream's read waiting for its writer before it gives its turn back"
        case .streamRelease: "a stream's read waiting for its writer before it gives its decoder back"
        case .streamHold: "a stream's hold on a decoder before it yields it at a pause to another caller's stream"
        case .streamHoldInSpeech: "a stream's hold on a decoder before it cuts an utterance for another caller's stream"
        case .streamCut: "how long a stream asked for its decoder waits for a pause before it cuts"
        case .streamTurn: "a stream's turn of decoding before it lets others' files and streams decode; and how often one that "
            + "holds its decoder through its writer's silence looks whether another caller's stream wants it"
        case .filePart: "the audio in each part of a long file, decoded on every core at once (files 1.5 times as long "
            + "and longer are cut; seconds of audio, not a wait)"
        }
    }
}

/// The bounds one voiceboxd runs with: the standard ones, but for those set on its command line.
public struct Bounds: Sendable, Equatable {
    private var chosen: [Bound: Duration] = [:]

    public init() {}

    public subscript(_ bound: Bound) -> Duration {
        get { chosen[bound] ?? bound.standard }
        set { chosen[bound] = newValue }
    }

    /// The bounds a test names, the rest standard: `Bounds([.speechdBegin: .milliseconds(300)])`.
    public init(_ values: [Bound: Duration]) { chosen = values }

    /// Sets one from `NAME=SECONDS` (the value of `--bound`), or says what is wrong with it.
    public mutating func set(_ text: String) throws(BoundError) {
        let parts = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard parts.count == 2, let bound = Bound(rawValue: parts[0]) else {
            throw BoundError("--bound takes NAME=SECONDS with a NAME from voiceboxd --help, not '\(text)'")
        }
        try set(bound, seconds: parts[1], as: "--bound \(bound.rawValue)")
    }

    /// Sets `bound` from `text` (seconds) as the option `option` gave it (`--grace`, or
    /// `--bound grace`): the one parser of both forms, so that they take the same values.
    public mutating func set(_ bound: Bound, seconds text: String, as option: String) throws(BoundError) {
        let (zero, most) = (bound.mayBeZero, bound.mostSeconds)
        guard let seconds = Double(text), seconds.isFinite, seconds > 0 || (zero && seconds == 0), seconds <= most else {
            let range = zero ? "from 0 to \(Int(most))" : "more than 0 and up to \(Int(most))"
            throw BoundError("\(option) takes seconds \(range), not '\(text)'")
        }
        chosen[bound] = .milliseconds(Int((seconds * 1000).rounded(.up)))
    }

    /// voiceboxd's `--help` lines for them: "  speechd-reply 2 s: speech-dispatcher's answer …".
    public static var usage: String {
        Bound.allCases.map { "  \($0.rawValue) \(Self.text($0.standard)): \($0.summary)" }.joined(separator: "\n")
    }

    static func text(_ duration: Duration) -> String {
        let milliseconds = Int(duration / .milliseconds(1))
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(Double(milliseconds) / 1000) s"
    }
}

public struct BoundError: Error, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

extension Duration {
    /// The duration in seconds, as a Double: for the C and Dispatch interfaces that take seconds.
    public var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

extension Bound {
    /// Whether a bound may be 0: no grace at all is a choice of its own; no other wait is.
    public var mayBeZero: Bool { self == .grace }

    /// The most a bound may be set to: a minute of grace, a day for models to stay loaded, an hour
    /// for every other.
    public var mostSeconds: Double {
        switch self {
        case .grace: 60
        case .modelIdle: 86_400
        default: 3600
        }
    }
}
