import VoiceboxBus

/// org.voicebox.Speech1 as served. dbus/org.voicebox.Speech1.xml is the published contract;
/// a test checks that the two say the same.
public enum Speech1 {
    public static let busName = "org.voicebox.Speech1"
    public static let objectPath = "/org/voicebox/Speech1"
    public static let interfaceName = "org.voicebox.Speech1"

    public static let interface = InterfaceDescription(
        name: interfaceName,
        methods: [
            .init("Speak", in: [.init("text", "s"), .init("options", "a{sv}")], out: [.init("id", "t")]),
            .init("StopSpeaking", in: [.init("id", "t")]),
            .init("PauseSpeaking"),
            .init("ResumeSpeaking"),
            .init("ListVoices", in: [.init("language", "s")], out: [.init("voices", "a(sssss)")]),
            .init("RefreshVoices"),
            .init("Recognize", in: [.init("options", "a{sv}")], out: [.init("text", "s"), .init("details", "a{sv}")]),
            .init("StopRecognition"),
            .init("CancelRecognition"),
        ],
        signals: [
            .init("SpeechStarted", [.init("id", "t")]),
            .init("SpeechMark", [.init("id", "t"), .init("name", "s")]),
            .init("SpeechFinished", [.init("id", "t"), .init("reason", "s")]),
            .init("VoicesChanged"),
            .init("RecognitionStarted", [.init("id", "t")]),
            .init("RecognitionPartial", [.init("id", "t"), .init("text", "s")]),
            .init("AudioLevel", [.init("id", "t"), .init("level", "d")]),
            .init("RecognitionProgress", [.init("id", "t"), .init("fraction", "d")]),
            .init("RecognitionFinished", [.init("id", "t"), .init("text", "s")]),
        ],
        properties: [
            .init("Version", "s"),
            .init("Speaking", "b"),
            .init("VoiceCount", "u"),
            .init("Listening", "b"),
            .init("RecognitionLanguages", "as"),
        ])
}
