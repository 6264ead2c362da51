/// Every property of the service (org.voicebox.Speech1), in the contract's order.
public enum ServiceProperties {
    public static let version = ServiceProperty("Version", "The service's version.", String.self)
    public static let speaking = ServiceProperty("Speaking", "Some utterance is being spoken now.", Bool.self)
    public static let paused = ServiceProperty("Paused", "Speech is held: at least one caller paused it.", Bool.self)
    public static let voiceCount = ServiceProperty("VoiceCount", "How many voices ListVoices(\"\") gives.", UInt32.self)
    public static let interrupted = ServiceProperty("Interrupted", "An audio interruption, either way, is in progress.", Bool.self)
    public static let listening = ServiceProperty("Listening", "A recognition is recording from a microphone now.", Bool.self)
    /// Admitted and not yet ended.
    public static let listeningID = ServiceProperty("ListeningID", "The id of the microphone recognition in progress, 0 when none.",
                                                    UInt64.self)
    public static let dictationID = ServiceProperty("DictationID", "The id of the dictation in progress (ListeningID when "
                                                    + "that recognition has the option dictation), 0 when none.", UInt64.self)
    public static let recognitionLanguages = ServiceProperty("RecognitionLanguages", "BCP-47 tags of the recognition models.",
                                                             [String].self)
}
