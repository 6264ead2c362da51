/// Where voiceboxd serves org.voicebox.Speech1, and the limit on Speak's text the contract states.
/// The interface itself (`Speech1`'s members, `Speech1Methods`, `Speech1.ErrorName`) is generated
/// from dbus/org.voicebox.Speech1.xml at build time (Plugins/ContractPlugin).
extension Speech1: BusInterface {
    public static let busName = "org.voicebox.Speech1"
    public static let objectPath = "/org/voicebox/Speech1"
    /// The most text Speak takes, in bytes of UTF-8 (more is TooLarge).
    public static let maximumTextBytes = 65_536
}
