import VoiceboxBus
import VoiceboxCore

/// org.voicebox.Speech1, declared once: voiceboxd serves these declarations and clients call
/// through them. dbus/org.voicebox.Speech1.xml is the published contract, with the long
/// documentation; a test checks that the two say the same.
public enum Speech1 {
    public static let busName = "org.voicebox.Speech1"
    public static let objectPath = "/org/voicebox/Speech1"
    public static let interfaceName = "org.voicebox.Speech1"

    // MARK: Speaking

    public static let speak = BusMethod(
        "Speak", "Queue text; returns its id at once, or with `wait` once it has ended.",
        in: ("text", String.self), ("options", VarDict.self), out: ("id", UInt64.self))
    public static let stopSpeaking = BusMethod(
        "StopSpeaking", "Stop an utterance by id, whoever queued it; 0 stops everything the caller queued.",
        in: ("id", UInt64.self))
    public static let stopAllSpeaking = BusMethod(
        "StopAllSpeaking", "Stop every caller's speech (a desktop's stop-reading key).")
    public static let pauseSpeaking = BusMethod(
        "PauseSpeaking", "Hold speech until this caller resumes or leaves the bus.")
    public static let resumeSpeaking = BusMethod(
        "ResumeSpeaking", "Release this caller's pause; speech goes on once no caller holds one.")
    public static let listVoices = BusMethod(
        "ListVoices", "Voices for a BCP-47 language (\"\" for all), best match first.",
        in: ("language", String.self), out: ("voices", [Voice].self))
    public static let refreshVoices = BusMethod(
        "RefreshVoices", "List the voices again; VoicesChanged follows if they differ.")

    // MARK: Recognizing

    public static let recognize = BusMethod(
        "Recognize", "Recognize speech from the microphone or a file; replies when recognition ends.",
        in: ("options", VarDict.self), reply: RecognizeReply.self, replyNames: ["text", "details"])
    public static let stopRecognition = BusMethod(
        "StopRecognition", "End the caller's recognitions now with what was heard.")
    public static let cancelRecognition = BusMethod(
        "CancelRecognition", "End the caller's recognitions now with org.voicebox.Error.Cancelled.")
    public static let endRecognition = BusMethod(
        "EndRecognition", "End recognition `id`, whoever started it: with what was heard, or Cancelled when `cancel`.",
        in: ("id", UInt64.self), ("cancel", Bool.self))

    // MARK: Signals and properties: declared in VoiceboxCore, which emits them

    public static let speechStarted = BusSignal(ServiceSignals.speechStarted)
    public static let speechMark = BusSignal(ServiceSignals.speechMark)
    public static let speechFinished = BusSignal(ServiceSignals.speechFinished)
    public static let voicesChanged = BusSignal(ServiceSignals.voicesChanged)
    public static let recognitionStarted = BusSignal(ServiceSignals.recognitionStarted)
    public static let recognitionPartial = BusSignal(ServiceSignals.recognitionPartial)
    public static let audioLevel = BusSignal(ServiceSignals.audioLevel)
    public static let recognitionProgress = BusSignal(ServiceSignals.recognitionProgress)
    public static let recognitionFinished = BusSignal(ServiceSignals.recognitionFinished)
    public static let audioInterruption = BusSignal(ServiceSignals.audioInterruption)

    public static let version = BusProperty(ServiceProperties.version)
    public static let speaking = BusProperty(ServiceProperties.speaking)
    public static let paused = BusProperty(ServiceProperties.paused)
    public static let voiceCount = BusProperty(ServiceProperties.voiceCount)
    public static let interrupted = BusProperty(ServiceProperties.interrupted)
    public static let listening = BusProperty(ServiceProperties.listening)
    public static let listeningID = BusProperty(ServiceProperties.listeningID)
    public static let dictationID = BusProperty(ServiceProperties.dictationID)
    public static let recognitionLanguages = BusProperty(ServiceProperties.recognitionLanguages)

    /// The interface as introspection shows it, in the contract's order.
    public static let interface = InterfaceDescription(
        name: interfaceName,
        methods: [speak.description, stopSpeaking.description, stopAllSpeaking.description, pauseSpeaking.description,
                  resumeSpeaking.description, listVoices.description, refreshVoices.description, recognize.description,
                  stopRecognition.description, cancelRecognition.description, endRecognition.description],
        signals: [speechStarted.description, speechMark.description, speechFinished.description, voicesChanged.description,
                  recognitionStarted.description, recognitionPartial.description, audioLevel.description,
                  recognitionProgress.description, recognitionFinished.description, audioInterruption.description],
        properties: [version.description, speaking.description, paused.description, voiceCount.description,
                     listening.description, interrupted.description, listeningID.description,
                     dictationID.description, recognitionLanguages.description])

    /// The service as seen from a client on `connection`.
    public static func proxy(_ connection: BusConnection) -> BusProxy {
        BusProxy(connection: connection, destination: busName, path: objectPath, interface: interfaceName)
    }
}
