import Dispatch
import VoiceboxContract
import VoiceboxCore
import VoiceboxModels
import VoiceboxThreads

/// The service's `RecognitionEngine`: every decoder is a `voicebox-worker decoder` process (see
/// `WorkerProtocol`), so this process never loads a model nor decodes, and a model or audio that
/// crashes pocketsphinx ends one recognition, not the service.
public final class WorkerRecognitionEngine: RecognitionEngine {
    public let catalog: ModelCatalog
    private let pool: DecoderWorkerPool

    /// - Parameter idleUnloadAfter: idle workers are stopped after this long without use.
    /// - Parameter bounds: the waits on the workers (`worker-start`, `worker-model-load`,
    ///   `worker-answer`, `worker-end`, `worker-reap`, `worker-cancel`).
    /// - Parameter log: receives the engine's error lines (meant for a debug log).
    public init(workerPath: String, catalog: ModelCatalog = .standard(), idleUnloadAfter: Duration = Bound.modelIdle.standard,
                bounds: Bounds = Bounds(), log: LogSink? = nil) {
        self.catalog = catalog
        pool = DecoderWorkerPool(workerPath: workerPath, idleTimeout: idleUnloadAfter, bounds: bounds, log: log)
    }

    public var languages: [String] { catalog.models().map(\.language) }

    public func makeDecoder(_ configuration: RecognitionConfiguration) async throws -> sending any SpeechDecoder {
        let model = try catalog.model(checking: configuration)
        let pool = self.pool
        let kind = DecoderWorkerPool.Kind(model: model, languageModel: configuration.usesLanguageModel)
        // A warm worker may have died while idle (the OOM killer): then one more, started afresh.
        // Not one we stopped for silence: a configuration that hangs one worker would hang the
        // next; nor one that exited, which ran and so exited on the configuration itself.
        var retried = false
        while true {
            let worker = try await pool.take(kind)
            do {
                let timing = try await WorkerSpeechDecoder.configure(worker, configuration)
                return WorkerSpeechDecoder(worker: worker, timing: timing) { worker in
                    Task { await pool.giveBack(worker) }
                }
            } catch {
                await pool.giveBack(worker)
                guard worker.diedByItself, worker.endedBySignal, !retried else { throw error }
                retried = true
            }
        }
    }

    public func failedToLoadLastTime(_ configuration: RecognitionConfiguration) async -> Bool {
        // A language with no model fails at once in `makeDecoder`, before anything opens.
        guard let model = try? catalog.model(checking: configuration) else { return true }
        return await pool.failedToLoadLastTime(DecoderWorkerPool.Kind(model: model, languageModel: configuration.usesLanguageModel))
    }

    /// Stops every idle worker now (the idle timer does this by itself).
    public func unloadIdleModels() async {
        await pool.stopIdle()
    }

    /// Workers held warm (for diagnostics and tests).
    public var warmWorkerCount: Int {
        get async { await pool.idleCount }
    }
}
