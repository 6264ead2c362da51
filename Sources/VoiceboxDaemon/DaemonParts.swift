import Glibc
import VoiceboxBus
import VoiceboxContract
import VoiceboxCore
import VoiceboxStreams
import VoiceboxSpeechd
import VoiceboxWorkers

/// The real parts of the service, wired together: speech-dispatcher, the bus object, the audio
/// session over the voicebox-audio helper, speaking, rendering and recognizing in workers.
struct DaemonParts {
    let synthesizer: SpeechDispatcherSynthesizer
    let object: SpeechObject
    let audio: AudioHelper
    let session: AudioSession
    let rendering: Rendering
    let speech: SpeechService
    let recognition: RecognitionService

    init(connection: BusConnection, options: DaemonOptions) throws(DBusError) {
        synthesizer = SpeechDispatcherSynthesizer(configuration: .init(
            address: options.speechdAddress, autospawn: options.autospawn, bounds: options.bounds,
            recovery: options.speechdRecovery == .restart ? .restart : .reconnect, log: { message in Daemon.log(message) }))
        object = try SpeechObject(connection: connection, notifyMicrophone: options.notifyMicrophone, bounds: options.bounds)
        let policy = VoiceCache.Policy(bounds: options.bounds, maximumWait: options.bounds[.voicesWait])
        // The audio session: pauses or ducks other audio while we speak or listen, and holds our
        // own work while a call has the audio. The sound-server connections (the mixer, every
        // microphone recording) live in the voicebox-audio helper: the service links no libpulse.
        audio = AudioHelper(helperPath: AudioHelper.besideThisExecutable(), bounds: options.bounds,
                            log: { message in Daemon.log(message) })
        let players = MPRISPlayers(connection: connection, timeout: options.bounds[.playerAnswer])
        session = AudioSession(mixer: audio, players: players, journal: FileJournalStore.default(),
                               bus: object, settings: options.audio, bounds: options.bounds, ownProcessID: getpid(),
                               log: { message in Daemon.log(message) })
        // Speak's `output` and the Spiel provider render with speech-dispatcher's modules, confined.
        rendering = Rendering(workerPath: WorkerAudioFiles.besideThisExecutable(), bounds: options.bounds)
        speech = SpeechService(synthesizer: synthesizer, bus: object, session: session, voicePolicy: policy,
                               renderer: rendering.renderer, renderQueue: rendering.queue)
        // Models load on the first Recognize, not here: a daemon that only speaks never pays for them.
        let sphinxLog: LogSink? = options.debug ? { @Sendable message in Daemon.log("debug: pocketsphinx: " + message) } : nil
        // Decoding, and reading a caller's file, run in confined worker processes: a damaged model
        // or a hostile file crashes one of those, not us.
        let workerPath = WorkerAudioFiles.besideThisExecutable()
        let engine = WorkerRecognitionEngine(workerPath: workerPath, idleUnloadAfter: options.bounds[.modelIdle],
                                             bounds: options.bounds, log: sphinxLog)
        let files = WorkerAudioFiles(workerPath: workerPath, bounds: options.bounds)
        recognition = RecognitionService(engine: engine, capture: audio, files: files,
                                         streams: DescriptorAudioStreams(converters: files), bus: object, session: session,
                                         maxFileRecognitions: ProcessEnvironment.usableCores, bounds: options.bounds)
    }

    /// Properties published and the session running, before a caller can find the name.
    func start() async {
        await recognition.run()
        await session.add(speech)
        await session.add(recognition)
        await session.start()
        await speech.start()
    }
}
