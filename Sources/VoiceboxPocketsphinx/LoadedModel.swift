import VoiceboxCore
import VoiceboxModels

/// One model loaded for one process's own use: what a decoder worker holds.
/// pocketsphinx runs one search at a time, so one recognition's decoder at a time: the previous
/// one must be gone before the next is made.
public final class LoadedModel {
    private let sphinx: SphinxDecoder

    /// Loads the model (see `SphinxDecoder`); `log` receives pocketsphinx's messages as they come.
    public init(model: SpeechModel, languageModel: Bool, log: LogSink?) throws {
        sphinx = try SphinxDecoder(model: model, languageModel: languageModel, log: log)
    }

    /// A decoder for one recognition. Throws `RecognitionError` for a search the model refuses.
    public func decoder(for configuration: RecognitionConfiguration) throws -> PocketsphinxDecoder {
        let plan = try SearchPlan(configuration)
        try sphinx.prepare(plan)
        return PocketsphinxDecoder(sphinx: sphinx, plan: plan)
    }
}

extension LoadedModel {
    /// What a person can act on in one of pocketsphinx's log lines, when it reports an error or a
    /// fatal one (nil for the rest): `ERROR: "file.c", line 9: reason` → `reason`.
    public static func errorReason(_ line: String) -> String? {
        guard line.hasPrefix("ERROR") || line.hasPrefix("FATAL") else { return nil }
        return SphinxLog.reason(line)
    }
}
