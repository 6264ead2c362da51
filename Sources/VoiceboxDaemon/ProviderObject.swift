import VoiceboxBus
import VoiceboxContract
import VoiceboxCore

/// The Spiel face of the service: /org/voicebox/Speech/Provider exported with
/// org.freedesktop.Speech.Provider (`SpeechProvider`), whose Synthesize the `SynthesisService`
/// answers and whose Voices it keeps. The bus name is taken once the first voice list is published
/// (`claimName`), so a client that activated the service by that name finds the voices there.
public final class ProviderObject: Sendable {
    public static let displayName = "Voicebox"
    private let object: ExportedObject
    private let connection: BusConnection

    public init(connection: BusConnection, service: SynthesisService) throws(DBusError) {
        self.connection = connection
        object = try connection.export(path: SpeechProvider.objectPath, interface: SpeechProvider.interface,
                                       handlers: SpeechProvider.implementations(of: Methods(service: service)).map(MethodHandler.init))
        object.set(SpeechProvider.name, Self.displayName)
        publish(OfferedVoices())
    }

    /// Every new list goes out with PropertiesChanged, carrying it (libspiel keeps what it got).
    /// The value is made when it is read, from the voice list the cache holds anyway.
    public func publish(_ voices: OfferedVoices) {
        object.setComputedProperty(SpeechProvider.voices.name) { voices.list.busValue }
    }

    /// Takes org.voicebox.Speech.Provider; logs and goes on without it if another process has it.
    public func claimName(log: @Sendable (String) -> Void) async {
        do {
            if try await connection.requestName(SpeechProvider.busName) == .taken {
                log("\(SpeechProvider.busName) is owned by another process: not a Spiel provider here")
            }
        } catch {
            log("cannot own \(SpeechProvider.busName): \(error.message)")
        }
    }

    public func releaseName() async {
        try? await connection.releaseName(SpeechProvider.busName)
    }
}

extension ProviderObject {
    /// What Synthesize does (`SpeechProviderMethods`, generated from the contract, requires it).
    struct Methods: SpeechProviderMethods {
        let service: SynthesisService

        func synthesize(pipeFd: UnixDescriptor, text: String, voiceId: String, pitch: Double, rate: Double, isSsml: Bool,
                        language: String, caller: String) async throws {
            try await service.synthesize(caller: caller, fd: pipeFd.descriptor, text: text, voiceID: voiceId, pitch: pitch,
                                         rate: rate, ssml: isSsml, language: language)
        }
    }
}
