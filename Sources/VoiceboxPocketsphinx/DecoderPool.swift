import Dispatch
import VoiceboxCore
import VoiceboxModels
import VoiceboxLock

/// Keeps loaded decoders warm between recognitions and frees them after a quiet spell.
/// A model is slow to load and large to hold (docs/benchmarks.md gives the figures), so one
/// idle decoder per kind is kept.
actor DecoderPool {
    struct Kind: Hashable, Sendable {
        var model: SpeechModel
        var languageModel: Bool
    }

    private let idleTimeout: Duration
    private let log: LogSink?
    private var idle: [Kind: SphinxDecoder] = [:]
    private var busy = 0
    /// Bumped whenever the pool is used, so a timer set before then does nothing.
    private var generation = 0
    private var expiry: Task<Void, Never>?

    /// Loads run here, off Swift's small cooperative pool (a load blocks for up to 0.6 s), and one
    /// at a time: model loading writes a few of sphinxbase's process-wide tables.
    private static let loader = DispatchQueue(label: "voicebox.pocketsphinx.load", qos: .userInitiated)

    init(idleTimeout: Duration, log: LogSink?) {
        self.idleTimeout = idleTimeout
        self.log = log
    }

    /// A decoder for `kind`: a warm one, or a freshly loaded one.
    func take(_ kind: Kind) async throws -> SphinxDecoder {
        touch()
        busy += 1
        if let warm = idle.removeValue(forKey: kind) { return warm }
        do {
            return try await load(kind)
        } catch {
            busy -= 1
            scheduleExpiry()
            throw error
        }
    }

    /// Takes a decoder back once its recognition is over.
    func giveBack(_ decoder: SphinxDecoder) {
        touch()
        busy -= 1
        decoder.removeCustomSearch()
        let kind = Kind(model: decoder.model, languageModel: decoder.hasLanguageModel)
        if idle[kind] == nil { idle[kind] = decoder }  // else it is freed here
        scheduleExpiry()
    }

    /// Frees every idle decoder now.
    func unloadIdle() {
        touch()
        idle = [:]
    }

    var idleCount: Int { idle.count }

    private func load(_ kind: Kind) async throws -> SphinxDecoder {
        let log = self.log
        return try await runBlocking(on: Self.loader) {
            try SphinxDecoder(model: kind.model, languageModel: kind.languageModel, log: log)
        }
    }

    private func touch() {
        generation &+= 1
        expiry?.cancel()
        expiry = nil
    }

    /// A timer, not a poll: one sleeping task while the pool is idle.
    private func scheduleExpiry() {
        guard busy == 0, !idle.isEmpty else { return }
        let generation = self.generation
        let timeout = idleTimeout
        expiry = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            guard !Task.isCancelled else { return }
            await self?.expire(generation)
        }
    }

    private func expire(_ generation: Int) {
        guard generation == self.generation, busy == 0 else { return }
        idle = [:]
        expiry = nil
    }
}
