import VoiceboxCore
import VoiceboxModels

/// Speech recognition on this machine with CMU pocketsphinx 0.8 (see `RecognitionEngine`).
///
/// Models load on first use and stay warm in a pool (one idle decoder per model and kind);
/// after `idleUnloadAfter` without use they are freed. Dictation loads the n-gram language model,
/// the slow and large part; grammars, keyphrases and confirmations load without it.
public final class PocketsphinxEngine: RecognitionEngine {
    public let catalog: ModelCatalog
    private let pool: DecoderPool

    /// - Parameter log: receives pocketsphinx's own messages (meant for a debug log); they never
    ///   go to stderr.
    public init(catalog: ModelCatalog = .standard(), idleUnloadAfter: Duration = .seconds(300), log: LogSink? = nil) {
        self.catalog = catalog
        pool = DecoderPool(idleTimeout: idleUnloadAfter, log: log)
        _ = SphinxLog.shared  // take pocketsphinx's log over before anything can print
    }

    public var languages: [String] { catalog.models().map(\.language) }

    public func makeDecoder(_ configuration: RecognitionConfiguration) async throws -> sending any SpeechDecoder {
        try await makePocketsphinxDecoder(configuration)
    }

    /// `makeDecoder` with the concrete type.
    public func makePocketsphinxDecoder(_ configuration: RecognitionConfiguration) async throws -> sending PocketsphinxDecoder {
        let (plan, kind) = try plan(configuration)
        let pool = self.pool
        let sphinx = try await pool.take(kind)
        do {
            try sphinx.prepare(plan)
        } catch {
            await pool.giveBack(sphinx)
            throw error
        }
        return PocketsphinxDecoder(sphinx: sphinx, plan: plan) { sphinx in
            Task { await pool.giveBack(sphinx) }
        }
    }

    /// Loads the model a configuration needs now, so the first recognition starts at once.
    public func preload(_ configuration: RecognitionConfiguration = .init()) async throws {
        let (_, kind) = try plan(configuration)
        // Straight back to the pool, so the next makeDecoder finds it there.
        await pool.giveBack(try await pool.take(kind))
    }

    /// The search a configuration asks for and the decoder it needs, checked before any model loads.
    private func plan(_ configuration: RecognitionConfiguration) throws -> (SearchPlan, DecoderPool.Kind) {
        let plan = try SearchPlan(configuration)
        guard let model = catalog.model(for: configuration.language) else {
            throw RecognitionError.unsupportedLanguage(configuration.language)
        }
        return (plan, .init(model: model, languageModel: plan.needsLanguageModel))
    }

    /// Frees every idle model now (the idle timer does this by itself).
    public func unloadIdleModels() async {
        await pool.unloadIdle()
    }

    /// Idle decoders held warm (for diagnostics and tests).
    public var warmDecoderCount: Int {
        get async { await pool.idleCount }
    }
}
