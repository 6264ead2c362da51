/// org.voicebox.Speech1, declared once: voiceboxd serves these declarations, VoiceboxCore emits its
/// signals and keeps its properties, and clients call through them. dbus/org.voicebox.Speech1.xml
/// is the published contract, with the long documentation; a test checks that the two say the same.
public enum Speech1: BusInterface {
    public static let busName = "org.voicebox.Speech1"
    public static let objectPath = "/org/voicebox/Speech1"
    public static let interfaceName = "org.voicebox.Speech1"
    /// The most text Speak takes, in bytes of UTF-8 (more is TooLarge).
    public static let maximumTextBytes = 65_536

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

    // MARK: Signals (VoiceboxCore emits them)

    public static let speechStarted = BusSignal("SpeechStarted", "An utterance began to sound.", ("id", UInt64.self))
    public static let speechMark = BusSignal("SpeechMark", "An SSML <mark/> was reached.",
                                             ("id", UInt64.self), ("name", String.self))
    public static let speechFinished = BusSignal("SpeechFinished", "done, cancelled, interrupted or error.",
                                                 ("id", UInt64.self), ("reason", SynthesisEnd.self))
    public static let voicesChanged = BusSignal("VoicesChanged", "The voice list changed.")
    public static let recognitionStarted = BusSignal("RecognitionStarted", "The microphone is open, or the file is being decoded.",
                                                     ("id", UInt64.self))
    /// The best guess so far (only when the caller asked for partial results).
    public static let recognitionPartial = BusSignal("RecognitionPartial", "The best guess so far.",
                                                     ("id", UInt64.self), ("text", String.self))
    public static let audioLevel = BusSignal("AudioLevel", "The microphone's loudness, 0 ... 1.",
                                             ("id", UInt64.self), ("level", Double.self))
    public static let recognitionProgress = BusSignal("RecognitionProgress", "The fraction of a file decoded.",
                                                      ("id", UInt64.self), ("fraction", Double.self))
    /// Every recognition that started ends with this; the text is empty when it was cancelled or failed.
    public static let recognitionFinished = BusSignal("RecognitionFinished", "Every RecognitionStarted ends with one.",
                                                      ("id", UInt64.self), ("text", String.self))
    public static let audioInterruption = BusSignal(
        "AudioInterruption", "began or ended; info: reason, id, should_resume, paused_players, muted/ducked/corked_streams.",
        ("state", InterruptionState.self), ("info", InterruptionInfo.self))

    // MARK: Properties (VoiceboxCore keeps them)

    public static let version = BusProperty("Version", "The service's version.", String.self)
    public static let speaking = BusProperty("Speaking", "Some utterance is being spoken now.", Bool.self)
    public static let paused = BusProperty("Paused", "Speech is held: at least one caller paused it.", Bool.self)
    public static let voiceCount = BusProperty("VoiceCount", "How many voices ListVoices(\"\") gives.", UInt32.self)
    public static let interrupted = BusProperty("Interrupted", "An audio interruption, either way, is in progress.", Bool.self)
    public static let listening = BusProperty("Listening", "A recognition is recording from a microphone now.", Bool.self)
    /// Admitted and not yet ended.
    public static let listeningID = BusProperty("ListeningID", "The id of the microphone recognition in progress, 0 when none.",
                                                    UInt64.self)
    public static let dictationID = BusProperty("DictationID", "The id of the dictation in progress (ListeningID when "
                                                + "that recognition has the option dictation), 0 when none.", UInt64.self)
    public static let recognitionLanguages = BusProperty("RecognitionLanguages", "BCP-47 tags of the recognition models.",
                                                         [String].self)

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
}
