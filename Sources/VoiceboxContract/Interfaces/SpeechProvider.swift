/// org.freedesktop.Speech.Provider, the interface of Spiel speech providers, declared once as
/// libspeechprovider publishes it (dbus/org.freedesktop.Speech.Provider.xml is a copy of its
/// interface/org.freedesktop.Speech.Provider.xml; a test checks that voiceboxd serves the same).
/// voiceboxd serves it as org.voicebox.Speech.Provider: libspiel finds every name ending in
/// `.Speech.Provider`, and looks for the object at the name with dots made slashes.
public enum SpeechProvider: BusInterface {
    public static let busName = "org.voicebox.Speech.Provider"
    public static let objectPath = "/org/voicebox/Speech/Provider"
    public static let interfaceName = "org.freedesktop.Speech.Provider"

    public static let synthesize = BusMethod(
        "Synthesize", "Write the utterance into pipe_fd (audio/x-spiel, or raw PCM per the voice's format) while it is read.",
        in: ("pipe_fd", UnixDescriptor.self), ("text", String.self), ("voice_id", String.self), ("pitch", Double.self),
        ("rate", Double.self), ("is_ssml", Bool.self), ("language", String.self))

    public static let voices = BusProperty("Voices", "(name, id, output format, features, languages) of each voice.",
                                           [ProviderVoice].self)
    public static let name = BusProperty("Name", "A name for people.", String.self)

    /// The interface as introspection shows it, in the published XML's order.
    public static let interface = InterfaceDescription(name: interfaceName, methods: [synthesize.description],
                                                      properties: [voices.description, name.description])
}
