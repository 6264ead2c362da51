import Dispatch
import Glibc
import Synchronization
import VoiceboxBus
import VoiceboxCore
import VoiceboxInterface
import VoiceboxModels
import VoiceboxStreams
import VoiceboxSpeechd
import VoiceboxWorkers

/// Wires the real parts together and serves until SIGTERM, SIGINT or the loss of the bus.
public enum Daemon {
    /// Returns the process's exit status. `terminations` carries the numbers of SIGTERM and SIGINT.
    public static func run(_ options: DaemonOptions, terminations: AsyncStream<Int32>) async -> Int32 {
        // Whatever ends the service first (a signal, or the bus going away) gives the status.
        let (endings, end) = AsyncStream<Int32>.makeStream()
        let stopRequested = StopRequest()
        Task {
            for await number in terminations {
                log("signal \(number): exiting")
                stopRequested.set()
                end.yield(0)
            }
        }
        let connection: BusConnection
        do throws(DBusError) {
            if let address = options.busAddress {
                connection = try BusConnection(address: address)
            } else {
                connection = try BusConnection.session()
            }
        } catch {
            log("cannot connect to the bus: \(error.message)")
            return 1
        }
        // Once the calls stop, what they freed goes back to the system instead of staying resident.
        // Soon (memory-trim, 0.5 s), so that it is over before anyone measures an idle daemon's CPU
        // (bench/ and the tests start 1 s or more after their last call).
        connection.boundBusDaemonCalls(options.bounds[.busCall])
        connection.whenQuiet(after: options.bounds[.memoryTrim]) { MallocArenas.returnFreeMemory() }
        let synthesizer = SpeechDispatcherSynthesizer(configuration: .init(
            address: options.speechdAddress, autospawn: options.autospawn, bounds: options.bounds,
            recovery: options.speechdRecovery == .restart ? .restart : .reconnect, log: { message in Daemon.log(message) }))
        let object: SpeechObject
        do {
            object = try SpeechObject(connection: connection, notifyMicrophone: options.notifyMicrophone, bounds: options.bounds)
        } catch {
            log("cannot export \(Speech1.objectPath): \(error.message)")
            return 1
        }
        let policy = VoiceCache.Policy(bounds: options.bounds, maximumWait: options.bounds[.voicesWait])
        // The audio session: pauses or ducks other audio while we speak or listen, and holds our
        // own work while a call has the audio. The sound-server connections (the mixer, every
        // microphone recording) live in the voicebox-audio helper: the service links no libpulse.
        let audio = AudioHelper(helperPath: AudioHelper.besideThisExecutable(), bounds: options.bounds,
                                log: { message in Daemon.log(message) })
        let players = MPRISPlayers(connection: connection, timeout: options.bounds[.playerAnswer])
        let session = AudioSession(mixer: audio, players: players, journal: FileJournalStore.default(),
                                   bus: object, settings: options.audio, bounds: options.bounds, ownProcessID: getpid(),
                                   log: { message in Daemon.log(message) })
        // Speak's `output` and the Spiel provider render with speech-dispatcher's modules, confined.
        let rendering = Rendering(workerPath: WorkerAudioFiles.besideThisExecutable(), bounds: options.bounds)
        let service = SpeechService(synthesizer: synthesizer, bus: object, session: session, voicePolicy: policy,
                                    renderer: rendering.renderer, renderQueue: rendering.queue)
        // Models load on the first Recognize, not here: a daemon that only speaks never pays for them.
        let sphinxLog: LogSink? = options.debug ? { @Sendable message in Daemon.log("debug: pocketsphinx: " + message) } : nil
        // Decoding, and reading a caller's file, run in confined worker processes: a damaged model
        // or a hostile file crashes one of those, not us.
        let workerPath = WorkerAudioFiles.besideThisExecutable()
        let engine = WorkerRecognitionEngine(workerPath: workerPath, idleUnloadAfter: options.bounds[.modelIdle],
                                             bounds: options.bounds, log: sphinxLog)
        let files = WorkerAudioFiles(workerPath: workerPath, bounds: options.bounds)
        let recognition = RecognitionService(engine: engine, capture: audio, files: files,
                                             streams: DescriptorAudioStreams(), bus: object, session: session,
                                             maxFileRecognitions: ProcessEnvironment.usableCores, bounds: options.bounds)
        await recognition.run()  // its properties are there before a caller can find the name
        await session.add(service)
        await session.add(recognition)
        await session.start()

        // Export and publish first, then take the name: a caller activated by the name finds it all.
        await service.start()
        let provider = await startProvider(connection, speech: service, rendering: rendering, bus: object)
        // Stopped while starting: never publish an owner that is about to go.
        if stopRequested.isSet {
            await connection.close()
            synthesizer.shutdown()
            return 0
        }
        do {
            switch try await connection.requestName(Speech1.busName) {
            case .primaryOwner, .alreadyOwner:
                break
            case .taken:
                let owner = (try? await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                        interface: "org.freedesktop.DBus", member: "GetNameOwner",
                                                        arguments: [.string(Speech1.busName)], timeout: options.bounds[.busCall]))?
                    .first?.string ?? "another process"
                log("\(Speech1.busName) is already owned by \(owner): is another voiceboxd running?")
                return 2
            }
        } catch {
            log("cannot own \(Speech1.busName): \(error.message)")
            return 1
        }
        log("serving \(Speech1.busName) as \(connection.uniqueName)")
        let providerWait = options.bounds[.providerVoices]
        let providerName = Task { await claimProviderName(provider, waitingAtMost: providerWait) }
        // Only now: undoing a crashed interruption announces its `ended`, which a monitor watching
        // the name must see (and a voiceboxd that found the name taken must leave to its owner).
        Task { await session.run() }

        connection.onDisconnect {
            log("lost the bus; exiting")
            end.yield(1)
        }
        Task { await service.run() }
        object.serve(service, recognition: recognition)
        var status: Int32 = 1
        for await ending in endings {
            status = ending
            break
        }
        // Others get their audio back and every `ended` goes out while the name is still ours, so
        // that a monitor watching the name sees it.
        await session.finish()
        providerName.cancel()
        await provider?.0.releaseName()
        try? await connection.releaseName(Speech1.busName)
        await connection.close()
        synthesizer.shutdown()
        audio.shutdown()
        return status
    }

    /// One line on standard error (the journal, under systemd), prefixed with our name.
    public static func log(_ message: String) {
        let line = Array(("voiceboxd: " + message + "\n").utf8)
        _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

/// Set once TERM or INT has come; read by start-up, which must not take the name then.
private final class StopRequest: Sendable {
    private let flag = Atomic(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
    func set() { flag.store(true, ordering: .releasing) }
}
