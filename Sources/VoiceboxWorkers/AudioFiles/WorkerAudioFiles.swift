import Glibc
import VoiceboxContract
import VoiceboxCore

/// The service's `AudioFiles`: this process opens the file with the path or descriptor checks
/// (`RegularFile`) and a confined `voicebox-worker` decodes it (see `WorkerProtocol`), so a file
/// that crashes libsndfile or libsamplerate ends one recognition, not the service.
public struct WorkerAudioFiles: AudioFiles {
    public let workerPath: String
    let launcher: WorkerLauncher
    /// The waits on a worker: `worker-start`, `file-worker-header`, `file-worker-answer`,
    /// `worker-end`, `worker-reap`.
    let bounds: Bounds

    public init(workerPath: String, bounds: Bounds = Bounds()) {
        self.workerPath = workerPath
        self.bounds = bounds
        launcher = WorkerLauncher(startBound: bounds[.workerStart])
    }

    /// The worker installed beside the running executable (`.build/debug`, `/usr/local/bin`, ...).
    public static func besideThisExecutable(_ name: String = WorkerProtocol.executableName) -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return name }
        let executable = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let directory = executable.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return directory + "/" + name
    }

    public func open(path: String) throws -> any AudioFile {
        let fd = try RegularFile.open(path)
        return try WorkerAudioFile(descriptor: fd, name: path, raw: path.lowercased().hasSuffix(".raw"), workerPath: workerPath,
                                   launcher: launcher, bounds: bounds)
    }

    /// Through /proc/self/fd: a new open file description of the same file (its own offset), with
    /// every check a path gets. A headerless .raw file cannot be told by name here: formats with a
    /// header only.
    public func open(descriptor: Int32) throws -> any AudioFile {
        let name = "the file passed as a descriptor"
        let fd = try RegularFile.open("/proc/self/fd/\(descriptor)", name: name)
        return try WorkerAudioFile(descriptor: fd, name: name, raw: false, workerPath: workerPath, launcher: launcher, bounds: bounds)
    }
}
