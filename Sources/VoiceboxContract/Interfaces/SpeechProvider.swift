/// Where voiceboxd serves org.freedesktop.Speech.Provider, the interface of Spiel speech providers
/// (generated from dbus/org.freedesktop.Speech.Provider.xml, a copy of libspeechprovider's, at
/// build time). libspiel finds every name ending in `.Speech.Provider`, and looks for the object
/// at the name with dots made slashes.
extension SpeechProvider: BusInterface {
    public static let busName = "org.voicebox.Speech.Provider"
    public static let objectPath = "/org/voicebox/Speech/Provider"
}
