import Foundation
import VoiceboxCore

/// Checks that a model loads before this process loads it. pocketsphinx 0.8 ends the whole
/// process on some damaged model files (measured with Debian's en-US model cut short): a
/// truncated `mdef`, or a `sendump` cut to 1 %, crashes it with SIGSEGV; a truncated
/// `transition_matrices`, or a `means` one byte short, makes it call exit(1) (E_FATAL). Only a
/// throw-away process can load such a file and live to tell, so the service has one do it first,
/// once for each state of the model's files; the verdict is the verifier's error or nothing.
/// The language model is left out of the check: cut anywhere (17 points from 0 to 99.99 %), its
/// reader failed cleanly or loaded, never ended the process, and it is 0.4 s of the 0.5 s a load takes.
public typealias ModelVerifier = @Sendable (_ model: SpeechModel) async throws -> Void

public enum ModelCheck {
    /// Loads the model and frees it: what the throw-away process runs. pocketsphinx's errors and
    /// fatal messages go to `errors` as they come, so that they are out before an E_FATAL exit.
    public static func load(_ model: SpeechModel, errors: @escaping LogSink) throws {
        _ = SphinxLog.shared
        _ = try SphinxDecoder(model: model, languageModel: false, log: { line in
            if line.hasPrefix("ERROR") || line.hasPrefix("FATAL") { errors(SphinxLog.reason(line)) }
        })
    }

    /// Path, size and modification time of every file a load reads: a verdict holds while this
    /// stays the same (a model replaced or cut short afterwards is checked again).
    static func fingerprint(_ model: SpeechModel) -> String {
        let manager = FileManager.default
        let acoustic = ((try? manager.contentsOfDirectory(atPath: model.acousticModel)) ?? []).sorted()
            .map { model.acousticModel + "/" + $0 }
        let files = acoustic + [model.dictionary]
        return files.map { path in
            var status = stat()
            guard stat(path, &status) == 0 else { return path + " missing" }
            return "\(path) \(status.st_size) \(status.st_mtim.tv_sec).\(status.st_mtim.tv_nsec)"
        }.joined(separator: "\n")
    }
}
