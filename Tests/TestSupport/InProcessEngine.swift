import VoiceboxCore
import VoiceboxModels
import VoiceboxPocketsphinx
import VoiceboxThreads

/// Decodes in the test process what a decoder worker decodes in its own: the model the service
/// picks for a configuration (as `WorkerRecognitionEngine.makeDecoder` does), loaded by
/// `LoadedModel` (as `voicebox-worker decoder` does). Each decoder loads its own model, as a
/// freshly started worker would: 0.06 s without the language model, 0.2 s with it.
struct InProcessEngine: RecognitionEngine {
    let catalog: ModelCatalog
    private let log: LogSink?

    /// Loading writes a few of sphinxbase's process-wide tables: one load at a time in a process
    /// (a worker loads alone in its own). A count of loads, not `Locked<Void>`: ThreadSanitizer
    /// reports accesses to a zero-sized value as races.
    private static let loading = Locked(0)

    /// - Parameter log: receives pocketsphinx's messages as they come.
    init(catalog: ModelCatalog = .standard(), log: LogSink? = nil) {
        self.catalog = catalog
        self.log = log
    }

    var languages: [String] { catalog.models().map(\.language) }

    /// The model a worker for `configuration` would load, loaded; it makes one decoder at a time.
    /// Throws `RecognitionError` where the service's engine would, in the same order.
    func loadModel(for configuration: RecognitionConfiguration) throws -> LoadedModel {
        let model = try catalog.model(checking: configuration)
        let log = self.log
        return try Self.loading.withLock { loads in
            loads += 1
            return try LoadedModel(model: model, languageModel: configuration.usesLanguageModel, log: log)
        }
    }

    func makeDecoder(_ configuration: RecognitionConfiguration) async throws -> sending any SpeechDecoder {
        try loadModel(for: configuration).decoder(for: configuration)
    }
}
