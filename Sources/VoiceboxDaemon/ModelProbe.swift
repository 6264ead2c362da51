import Foundation
import Glibc
import VoiceboxCore
import VoiceboxPocketsphinx
import VoiceboxSpawn

/// The throw-away process that loads a model before voiceboxd does (see `ModelCheck`): voiceboxd
/// itself, run as `voiceboxd --check-model ACOUSTIC-MODEL DICTIONARY`. A model that
/// crashes it, exits it or does not load within `timeout` fails the recognition with
/// EngineUnavailable, naming the model and what happened; the service itself lives on.
public enum ModelProbe {
    public static let flag = "--check-model"
    /// The check takes about 0.1 s here; a model that takes longer than this is as good as broken.
    static let timeout: Duration = .seconds(30)

    /// The throw-away process's side: loads the model; 0 if it loaded, 1 if pocketsphinx said no.
    public static func check(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2 else {
            FileHandle.standardError.write(Data("usage: voiceboxd \(flag) ACOUSTIC-MODEL DICTIONARY\n".utf8))
            return 64
        }
        let model = SpeechModel(language: "", acousticModel: arguments[0], languageModel: "", dictionary: arguments[1])
        let say: LogSink = { line in FileHandle.standardError.write(Data((line + "\n").utf8)) }
        do {
            try ModelCheck.load(model, errors: say)
            return 0
        } catch RecognitionError.engineFailure(let why) {
            say(why)
            return 1
        } catch {
            say("\(error)")
            return 1
        }
    }

    /// The service's side, a `ModelVerifier`: runs the check in a child and turns its end into a verdict.
    public static func verify(_ model: SpeechModel) async throws {
        let arguments = [flag, model.acousticModel, model.dictionary]
        // Off the cooperative pool: the wait blocks a thread for as long as the load takes.
        let (status, said) = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try run(arguments) })
            }
        }
        // The first line names the file (pocketsphinx then repeats itself up the call chain).
        let reason = said.split(whereSeparator: \.isNewline).first.map(String.init)
        let name = "the \(model.language) model (\(model.acousticModel))"
        if status.signal == SIGKILL, status.timedOut {
            throw RecognitionError.engineFailure("\(name) did not load within \(timeout.components.seconds) s")
        } else if let signal = status.signal {
            throw RecognitionError.engineFailure("\(name) is damaged: pocketsphinx crashed loading it (\(String(cString: strsignal(signal))))")
        } else if status.code != 0 {
            throw RecognitionError.engineFailure("\(name) does not load: \(reason ?? "pocketsphinx ended with status \(status.code)")")
        }
    }

    private struct Ending { var code: Int32 = 0; var signal: Int32?; var timedOut = false }

    /// Spawns this executable with `arguments`, its standard error into a pipe; waits (bounded).
    private static func run(_ arguments: [String]) throws -> (Ending, String) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw RecognitionError.engineFailure("cannot check the model: no pipe") }
        // Not inherited by children other threads spawn meanwhile (the dup2 below clears it on fd 2).
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        // Without the Swift runtime's crash report: a crash is the expected answer to a damaged model.
        let environment = ProcessInfo.processInfo.environment.filter { $0.key != "SWIFT_BACKTRACE" }
            .map { "\($0.key)=\($0.value)" } + ["SWIFT_BACKTRACE=enable=no"]
        let spawned = CleanSpawn.spawn("/proc/self/exe", arguments, actions: &actions, environment: environment)
        close(fds[1])
        defer { close(fds[0]) }
        guard case .success(let pid) = spawned else {
            throw RecognitionError.engineFailure("cannot check the model: \(spawned)")
        }
        var ending = Ending()
        if CleanSpawn.waitForExit(pid, timeout: timeout) == .stillRunning {
            kill(pid, SIGKILL)
            ending.timedOut = true
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        // The child is gone and the pipe's other end with it: this read ends.
        var said = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = read(fds[0], &buffer, buffer.count)
            if count > 0 { said.append(contentsOf: buffer[0..<count]); continue }
            if count < 0 && errno == EINTR { continue }
            break
        }
        if status & 0x7f == 0 {
            ending.code = (status >> 8) & 0xff
        } else {
            ending.signal = status & 0x7f
        }
        return (ending, String(decoding: said, as: UTF8.self))
    }
}
