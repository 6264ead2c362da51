import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxSpawn

extension WorkerAudioFiles: StreamConverters {
    /// A `voicebox-worker audio-stream` on `descriptor`, started by the file workers' launcher:
    /// it reads the caller's audio as a file worker does, so libsamplerate runs where the audio
    /// is read and never in voiceboxd.
    public func convert(_ input: StreamInput, reading descriptor: Int32, from offset: Int64?) throws -> any StreamConversion {
        try WorkerStreamConversion(input, reading: descriptor, from: offset, workerPath: workerPath, launcher: launcher,
                                   bounds: bounds)
    }
}

/// One caller's stream converted by a worker (`WorkerProtocol`, mode `audio-stream`). The stream
/// that reads its pipe bounds the waits (the caller's `stream_idle_seconds`); this only starts,
/// names and ends the worker.
final class WorkerStreamConversion: StreamConversion {
    let output: Int32
    private let child: Child
    private let bounds: Bounds

    init(_ input: StreamInput, reading descriptor: Int32, from offset: Int64?, workerPath: String, launcher: WorkerLauncher,
         bounds: Bounds) throws {
        self.bounds = bounds
        let started = try WorkerAudioFile.start([WorkerProtocol.audioStreamMode, "--parent", "\(getpid())",
                                                 "--encoding", input.encoding.rawValue, "--rate", "\(input.rate)",
                                                 "--channels", "\(input.channels)"] + (offset.map { ["--offset", "\($0)"] } ?? []),
                                                reading: descriptor, workerPath: workerPath, launcher: launcher,
                                                what: "the stream's converter")
        guard let output = started.output else {
            started.child.signal(SIGKILL)
            _ = started.child.end(within: bounds[.workerReap])
            throw RecognitionError.engineFailure("cannot start the stream's converter: no pipe")
        }
        child = started.child
        self.output = output
    }

    func ending() -> String {
        let termination = child.end(within: bounds[.workerEnd]).termination
        return switch termination {
        case .signalled: termination.description
        case .exited(let code): "ended (status \(code)) without finishing"
        default: "ended without finishing"
        }
    }

    func dismiss(finished: Bool) {
        close(output)
        if !finished { child.signal(SIGKILL) }
        _ = child.end(within: bounds[.workerReap])
    }
}
