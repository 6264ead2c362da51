import Dispatch
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads

/// The module processes: one probe per engine (can it render into memory, in what format, does it
/// report marks), and two spares started ahead per engine in use, so that a rendering takes a
/// module that is loaded already and the next ones load meanwhile. Two: utterances come in bursts
/// (libspiel queues several at once; one after another, the next came before its spare had loaded
/// on a loaded machine, 120 ms late). Spares nobody takes for the bound module-spare-idle are let
/// go: an idle service holds none. Those started at start-up, for the default engine once it is
/// probed (a Spiel client that activated the service speaks at once), go after module-spare-unused
/// if no rendering came: a service only asked to Speak or Recognize holds none 20 s after.
actor ModuleSpares {
    static let sparesPerEngine = 2

    private let workerPath: String
    private let bounds: Bounds
    private let defaultLanguage: String
    /// The engine that gets a spare as soon as it is probed (speech-dispatcher's default module).
    private let defaultEngine: String
    private let log: @Sendable (String) -> Void
    private let launcher = WorkerLauncher()
    /// Starting a module blocks (spawn, INIT): on this queue, off the cooperative pool, several at once.
    private let starting = DispatchQueue(label: "voicebox.modules.start", attributes: .concurrent)
    private var probes: [String: Task<RenderEngine?, Never>] = [:]
    private var spares: [String: [Task<ModuleProcess?, Never>]] = [:]
    /// Each engine's spares' idle clock, with its number: only the latest one lets them go.
    private var expiries: [String: (number: UInt64, task: Task<Void, Never>)] = [:]
    private var expiriesSet: UInt64 = 0

    init(workerPath: String, bounds: Bounds, defaultEngine: String, defaultLanguage: String, log: @escaping @Sendable (String) -> Void) {
        self.workerPath = workerPath
        self.bounds = bounds
        self.defaultEngine = defaultEngine
        self.defaultLanguage = defaultLanguage
        self.log = log
    }

    /// The engine `module` is, probed once; nil if it cannot render into memory. A probe that failed
    /// is tried again when asked after the bound module-probe-again (a module that timed out on a
    /// loaded machine).
    func engine(_ module: ModuleCatalog.Module) async -> RenderEngine? {
        if let probe = probes[module.name] { return await probe.value }
        let probe = Task { await self.probe(module) }
        probes[module.name] = probe
        let found = await probe.value
        if found == nil {
            Task {
                try? await Task.sleep(for: self.bounds[.moduleProbeAgain])
                self.forgetProbe(module.name)
            }
        }
        return found
    }

    private func forgetProbe(_ name: String) { probes[name] = nil }

    /// A module that has rendered nothing yet, for one utterance: the spare if one is ready (and
    /// still runs), else one started now; either way the next spare starts.
    func take(_ module: ModuleCatalog.Module) async throws -> ModuleProcess {
        let spare = spares[module.name]?.isEmpty == false ? spares[module.name]!.removeFirst() : nil
        startSpares(module, keptFor: bounds[.moduleSpareIdle])
        if let process = await spare?.value {
            if !process.hasEnded { return process }
            await runDismiss(process)
        }
        return try await start(module)
    }

    private func start(_ module: ModuleCatalog.Module) async throws -> ModuleProcess {
        let workerPath = workerPath, launcher = launcher, bounds = bounds
        return try await runBlocking(on: starting) { try ModuleProcess(module, bounds: bounds, workerPath: workerPath, launcher: launcher) }
    }

    /// Tops the engine's spares up to `sparesPerEngine`, and restarts their idle clock at `idle`.
    private func startSpares(_ module: ModuleCatalog.Module, keptFor idle: Duration) {
        let name = module.name
        while spares[name, default: []].count < Self.sparesPerEngine {
            spares[name, default: []].append(Task { try? await self.start(module) })
        }
        expiries[name]?.task.cancel()
        expiriesSet += 1
        let number = expiriesSet
        expiries[name] = (number, Task {
            try? await Task.sleep(for: idle)
            guard !Task.isCancelled else { return }
            await self.expire(name, number: number)
        })
    }

    /// An idle clock that woke as a take restarted it (cancelled too late) does nothing.
    private func expire(_ name: String, number: UInt64) async {
        guard expiries[name]?.number == number else { return }
        expiries[name] = nil
        for spare in spares.removeValue(forKey: name) ?? [] { await runDismiss(await spare.value) }
    }

    private func runDismiss(_ process: ModuleProcess?) async {
        guard let process else { return }
        _ = try? await runBlocking(on: starting) { process.dismiss(ended: true) }
    }

    /// Renders a word and a mark with a fresh module: the format of its audio, and whether the mark
    /// came back. A module that fails is left out (logged once).
    private func probe(_ module: ModuleCatalog.Module) async -> RenderEngine? {
        let language = defaultLanguage
        do {
            let process = try await start(module)
            let found = try await runBlocking(on: starting) { () throws -> RenderEngine in
                defer { process.dismiss(ended: false) }
                return try Self.probe(process, language: language)
            }
            if module.name == defaultEngine { startSpares(module, keptFor: bounds[.moduleSpareUnused]) }
            return found
        } catch {
            log("output module \(module.name) does not render into memory, its voices are not offered: \(error)")
            return nil
        }
    }

    private static func probe(_ process: ModuleProcess, language: String) throws -> RenderEngine {
        let name = process.module.name
        try process.send("SET\n")
        try process.expect(200..<300, "SET")
        try process.send("language=\(language)\nvoice=male1\nsynthesis_voice=NULL\n.\n")
        try process.expect(200..<300, "the settings")
        try process.send("SPEAK\n")
        try process.expect(200..<300, "SPEAK")
        try process.send("<speak>a <mark name=\"probe\"/>b</speak>\n.\n")
        try process.expect(200..<300, "the probe's text")
        var format: (rate: Int, channels: Int)?
        var marks = false
        while true {
            switch try process.next(within: process.bounds[.moduleSilence]) {
            case .audio(let rate, let channels, _): format = format ?? (rate, channels)
            case .mark("probe"): marks = true
            case .event(702):
                guard let format else { throw ModuleFailure(description: "\(name) rendered no audio") }
                return RenderEngine(name: name, sampleRate: format.rate, channels: format.channels, reportsMarks: marks,
                                    features: features(name, marks: marks))
            case .event(703): throw ModuleFailure(description: "\(name) stopped by itself")
            case .reply(let code, let lines): throw ModuleFailure(description: "\(name) sent '\(code) \(lines.joined(separator: " "))' while rendering")
            case .mark, .event: break
            }
        }
    }

    /// Events where the module reports marks; the SSML espeak-ng reads, for its modules.
    static func features(_ name: String, marks: Bool) -> UInt64 {
        var features: UInt64 = marks ? SpielFeatures.eventsWord | SpielFeatures.eventsSentence | SpielFeatures.eventsSSMLMark : 0
        if name.hasPrefix("espeak") {
            features |= SpielFeatures.sayAsCharacters | SpielFeatures.ssmlBreak | SpielFeatures.ssmlSub | SpielFeatures.ssmlEmphasis
                | SpielFeatures.ssmlProsody | SpielFeatures.ssmlSentenceParagraph
        }
        return features
    }
}
