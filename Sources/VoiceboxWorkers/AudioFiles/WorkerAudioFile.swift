import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxSpawn

/// One audio file read by a `voicebox-worker` (see `WorkerProtocol`): the worker decodes the file's
/// format and rate; this side only reads 16 kHz samples from its pipe, each wait bounded. A worker
/// that crashes, is killed or stops answering fails this file alone, naming how it ended.
final class WorkerAudioFile: AudioFile {
    let duration: Double?
    private let name: String
    private let bounds: Bounds
    private let child: Child
    private let output: Int32
    private var reader: MessageReader
    private var pending: [Int16] = []
    private var finished = false
    /// The worker's pid (for tests that kill it).
    var workerID: pid_t { child.pid }

    /// Starts a worker on `fd` (ours; closed here, the worker has its own copy) and waits for its
    /// header (`file-worker-header`; each later message `file-worker-answer`).
    init(descriptor fd: Int32, name: String, raw: Bool, workerPath: String, launcher: WorkerLauncher,
         bounds: Bounds) throws {
        defer { close(fd) }
        self.name = name
        self.bounds = bounds
        let started = try Self.start([WorkerProtocol.audioFileMode, "--parent", "\(getpid())", "--name", name]
                                         + (raw ? ["--raw", "16000:1"] : []),
                                     reading: fd, workerPath: workerPath, launcher: launcher, what: "the audio file reader")
        var reader = MessageReader(descriptor: started.output ?? -1)
        do {
            duration = try Self.header(from: &reader, child: started.child, name: name, bounds: bounds)
        } catch {
            let told = if case RecognitionError.unreadableAudio = error { true } else { false }
            Self.dismiss(started.child, output: started.output ?? -1, finished: told, within: bounds[.workerReap])
            throw error
        }
        child = started.child
        output = started.output ?? -1
        self.reader = reader
    }

    /// A crash is an answer, not a report: no Swift backtracer (its handler would also make calls
    /// the confinement refuses). In the tests' sanitizer builds, the sanitizer leaves SIGSEGV, SIGBUS
    /// and SIGFPE alone too, so the caller is told the signal, not the sanitizer's own exit.
    static let environment = ["SWIFT_BACKTRACE=enable=no",
                              "TSAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_sigfpe=0",
                              "ASAN_OPTIONS=handle_segv=0:handle_sigbus=0:handle_sigfpe=0:detect_leaks=0"]

    /// A worker that reads `fd` (its standard input) and writes messages on a pipe to us (its
    /// standard output): a file reader or a stream's converter.
    static func start(_ arguments: [String], reading fd: Int32, workerPath: String, launcher: WorkerLauncher,
                      what: String) throws -> Spawn.Started {
        var spec = ChildSpec(workerPath, arguments, environment: environment)
        spec.standardInput = .descriptor(fd)
        spec.standardOutput = .pipe
        spec.standardError = .inherit
        spec.workingDirectory = "/"
        do {
            return try launcher.start(spec)
        } catch {
            throw RecognitionError.engineFailure("cannot start \(what): \(error)")
        }
    }

    private static func header(from reader: inout MessageReader, child: Child, name: String, bounds: Bounds) throws -> Double? {
        let (tag, payload) = try next(from: &reader, child: child, name: name, within: bounds[.fileWorkerHeader], bounds: bounds)
        switch tag {
        case .header:
            guard let length = WorkerProtocol.duration(fromHeader: payload) else { throw violation(name, "a malformed header") }
            return length
        case .failure:
            throw RecognitionError.unreadableAudio(String(decoding: payload, as: UTF8.self))
        case .samples, .end:
            throw violation(name, "samples before the header")
        default:
            throw violation(name, "\(tag) in place of the header")
        }
    }

    deinit {
        Self.dismiss(child, output: output, finished: finished, within: bounds[.workerReap])
    }

    /// The next samples, about `maxSamples` of them; [] at the end of the file.
    func read(maxSamples: Int) throws -> [Int16] {
        while pending.count < maxSamples, !finished {
            let (tag, payload) = try Self.next(from: &reader, child: child, name: name, within: bounds[.fileWorkerAnswer],
                                               bounds: bounds)
            switch tag {
            case .samples:
                guard let samples = WorkerProtocol.samples(fromPayload: payload) else { throw Self.violation(name, "an odd number of bytes") }
                pending += samples
            case .end:
                finished = true
            case .failure:
                finished = true
                throw RecognitionError.unreadableAudio(String(decoding: payload, as: UTF8.self))
            case .header:
                throw Self.violation(name, "a second header")
            default:
                throw Self.violation(name, "\(tag) in an audio file's messages")
            }
        }
        let count = min(max(1, maxSamples), pending.count)
        defer { pending.removeFirst(count) }
        return Array(pending[0..<count])
    }

    /// The next message, waiting at most `bound`; a worker that ended without a last message is
    /// named with how it ended (waiting `worker-end` for that end).
    private static func next(from reader: inout MessageReader, child: Child, name: String,
                             within bound: Duration, bounds: Bounds) throws -> (WorkerProtocol.Tag, [UInt8]) {
        switch reader.next(within: bound) {
        case .message(let tag, let payload):
            return (tag, payload)
        case .closed:
            // It closed its output: it is ending, or has ended. A crash is over within milliseconds.
            let ending = child.end(within: bounds[.workerEnd]).termination
            throw RecognitionError.unreadableAudio("\(name): the audio file reader (\(WorkerProtocol.executableName)) "
                                                   + "was \(describe(ending)) while reading it")
        case .silent:
            child.signal(SIGKILL)
            throw RecognitionError.unreadableAudio("\(name): the audio file reader (\(WorkerProtocol.executableName)) "
                                                   + "sent nothing for \(DecoderWorker.seconds(bound)) and was stopped")
        case .malformed(let why):
            throw violation(name, why)
        case .failed(let code):
            throw RecognitionError.engineFailure("cannot read from the audio file reader: \(String(cString: strerror(code)))")
        }
    }

    /// "killed by SIGSEGV (Segmentation fault)"; an exit without its last message is a failure too.
    private static func describe(_ termination: Termination) -> String {
        switch termination {
        case .signalled: termination.description
        case .exited(let code): "ended (status \(code)) without finishing"
        case .unknown: "ended without finishing"
        }
    }

    private static func violation(_ name: String, _ what: String) -> RecognitionError {
        .engineFailure("\(name): the audio file reader broke its protocol (\(what))")
    }

    /// Done with the worker: one that finished ends by itself; one still reading is killed (closing
    /// the pipe alone would leave it until its next write). Reaped either way, within the bound.
    private static func dismiss(_ child: Child, output: Int32, finished: Bool, within bound: Duration) {
        if output >= 0 { close(output) }
        if !finished { child.signal(SIGKILL) }
        _ = child.end(within: bound)
    }
}
