import Foundation
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
        let ending = try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global(qos: .userInitiated).async {
                continuation.resume(with: Result { try run(arguments) })
            }
        }
        // The first line names the file (pocketsphinx then repeats itself up the call chain).
        let reason = ending.errorText.split(whereSeparator: \.isNewline).first.map(String.init)
        let name = "the \(model.language) model (\(model.acousticModel))"
        if ending.timedOut {
            throw RecognitionError.engineFailure("\(name) did not load within \(timeout.components.seconds) s")
        }
        switch ending.termination {
        case .exited(0), .unknown:
            return
        case .signalled:
            throw RecognitionError.engineFailure("\(name) is damaged: pocketsphinx crashed loading it (\(ending.termination))")
        case .exited(let code):
            throw RecognitionError.engineFailure("\(name) does not load: \(reason ?? "pocketsphinx ended with status \(code)")")
        }
    }

    /// Runs this executable with `arguments`, its standard error captured; bounded by `timeout`.
    private static func run(_ arguments: [String]) throws -> Spawn.Ending {
        // Without the Swift runtime's crash report: a crash is the expected answer to a damaged model.
        let environment = ProcessInfo.processInfo.environment.filter { $0.key != "SWIFT_BACKTRACE" }
            .map { "\($0.key)=\($0.value)" } + ["SWIFT_BACKTRACE=enable=no"]
        var spec = ChildSpec("/proc/self/exe", arguments, environment: environment)
        spec.standardError = .pipe
        do {
            return try Spawn.run(spec, timeout: timeout)
        } catch {
            throw RecognitionError.engineFailure("cannot check the model: \(error)")
        }
    }
}
