import Dispatch
import Glibc
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads

/// Speech rendered into memory by speech-dispatcher's own output modules, each run in a confined
/// process (WorkerProtocol's `output-module` mode) and spoken to in the output-module protocol with
/// `AUDIO audio_output_method=server`: the same programs, configured the same (`ModuleCatalog`), so
/// a voice renders what speech-dispatcher would play with it. A module that cannot (sd_generic
/// runs a program that plays by itself; a module that needs a socket its confinement refuses) fails
/// its probe, and its voices are not offered.
///
/// One process per utterance (`ModuleSpares` keeps one started ahead per engine in use); each
/// rendering runs on a thread of its own (`RenderPump`).
public final class OutputModules: SpeechRenderer {
    private let catalog: ModuleCatalog
    private let spares: ModuleSpares
    private let log: @Sendable (String) -> Void
    private let budget = ReadAheadBudget()

    public var defaultEngine: String { catalog.defaultModule }
    public var defaultLanguage: String { catalog.defaultLanguage }

    /// `bounds`: module-start, module-reply, module-silence.
    public init(catalog: ModuleCatalog = .load(), workerPath: String, bounds: Bounds = .init(), log: @escaping @Sendable (String) -> Void) {
        self.catalog = catalog
        self.log = log
        spares = ModuleSpares(workerPath: workerPath, bounds: bounds, defaultEngine: catalog.defaultModule,
                              defaultLanguage: catalog.defaultLanguage, log: log)
    }

    public func engines(among names: Set<String>) async -> [RenderEngine] {
        var engines: [RenderEngine] = []
        for name in names.sorted() {
            guard let module = catalog.modules[name] else { continue }
            if let engine = await spares.engine(module) { engines.append(engine) }
        }
        return engines
    }

    public func render(_ request: RenderRequest, into target: RenderTarget,
                       events: @escaping @Sendable (RenderEvent) -> Void) -> any RenderHandle {
        let rendering = ModuleRendering()
        let spares = spares, catalog = catalog, log = log, budget = budget
        Task {
            guard rendering.readEnd >= 0, let module = catalog.modules[request.engine],
                  let engine = await spares.engine(module) else {
                return Self.finish(target, rendering, .failed("\(request.engine) does not render into memory"), written: 0, events)
            }
            let process: ModuleProcess
            do {
                process = try await spares.take(module)
            } catch {
                log("rendering \(request.id): \(error)")
                return Self.finish(target, rendering, .failed("\(error)"), written: 0, events)
            }
            OwnThread.start(name: "render \(request.id)") {
                let pump = RenderPump(module: process, request: request, engine: engine, target: target,
                                      wake: rendering.readEnd, defaultLanguage: catalog.defaultLanguage, events: events,
                                      release: {
                                          process.dismiss(ended: true)
                                          events(.engineReleased)
                                      }, budget: budget)
                var (end, written) = (RenderEnd.done, 0)
                do {
                    try pump.start()
                    (end, written) = pump.run()
                } catch {
                    end = .failed("\(error)")
                }
                process.dismiss(ended: end == .done)
                if case .failed(let why) = end { log("rendering \(request.id) with \(module.name) failed: \(why)") }
                Self.finish(target, rendering, end, written: written, events)
            }
        }
        return rendering
    }

    /// The end of a rendering: a WAV file's sizes written in, the descriptor and the wake pipe closed,
    /// then `finished`.
    private static func finish(_ target: RenderTarget, _ rendering: ModuleRendering, _ end: RenderEnd, written: Int,
                               _ events: @Sendable (RenderEvent) -> Void) {
        if case .wav(seekable: true) = target.encoding, case .regularFile(let offset?) = target.descriptor.kind,
           written >= WAVHeader.size {
            Self.writeSizes(target.descriptor.fd, at: offset, dataBytes: written - WAVHeader.size)
        }
        target.descriptor.close()
        rendering.close()
        events(.finished(end))
    }

    /// The RIFF and data sizes of the WAV file whose header is at `offset` (a failure leaves the
    /// unknown-length sizes, which readers read to the end).
    private static func writeSizes(_ fd: Int32, at offset: Int64, dataBytes: Int) {
        let sizes = WAVHeader.sizes(dataBytes: dataBytes)
        _ = sizes.riff.withUnsafeBytes { pwrite(fd, $0.baseAddress, 4, off_t(offset) + off_t(WAVHeader.riffSizeOffset)) }
        _ = sizes.data.withUnsafeBytes { pwrite(fd, $0.baseAddress, 4, off_t(offset) + off_t(WAVHeader.dataSizeOffset)) }
    }
}
