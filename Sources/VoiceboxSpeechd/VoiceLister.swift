import CSpeechd
import Dispatch
import Glibc
import Synchronization
import VoiceboxCore

/// Lists the voices of every output module over a separate short-lived connection, on its own queue,
/// so that a listing (speech-dispatcher only lists the current output module's voices, and switching
/// modules is sticky) never changes or delays the speaking connection.
///
/// What speech-dispatcher 0.11.4 with espeak-ng 1.51 reports (measured): one output module
/// `espeak-ng` with 13,362 entries, one per language × variant. The name already carries the variant
/// ("English (Great Britain)" with variant "none", "English (Great Britain)+Annie" with variant
/// "Annie"), names are unique within the module, and `LIST SYNTHESIS_VOICES` is what
/// `SET SYNTHESIS_VOICE` accepts back. So `"<module>/<name>"` is a unique and stable id as is.
/// Languages come as espeak-ng writes them ("en-GB", "en-US", "en-029"): kept verbatim.
final class VoiceLister: Sendable {
    private let queue = DispatchQueue(label: "voicebox.speechd.voices")
    private let configuration: SpeechDispatcherSynthesizer.Configuration
    private let closed = Atomic<Bool>(false)

    /// A listing connection gives up on a server that stops answering.
    static let replyTimeoutSeconds = 15

    init(configuration: SpeechDispatcherSynthesizer.Configuration) {
        self.configuration = configuration
    }

    func close() {
        closed.store(true, ordering: .relaxed)
    }

    func list() async throws -> [Voice] {
        guard !closed.load(ordering: .relaxed) else {
            throw SynthesizerError.unavailable("the synthesizer was shut down")
        }
        let configuration = self.configuration
        return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Voice], any Error>) in
            queue.async {
                continuation.resume(with: Result { () throws(SynthesizerError) -> [Voice] in
                    try Self.listNow(configuration)
                })
            }
        }
    }

    static func listNow(_ configuration: SpeechDispatcherSynthesizer.Configuration) throws(SynthesizerError) -> [Voice] {
        let connection = try SpeechdConnector.open(address: configuration.address, autospawn: configuration.autospawn,
                                                   clientName: configuration.clientName, connectionName: "voices",
                                                   mode: SPD_MODE_SINGLE).get().connection
        defer { spd_close(connection) } // fcloses the stream unless a failed read already did
        var timeout = timeval(tv_sec: replyTimeoutSeconds, tv_usec: 0)
        _ = setsockopt(connection.pointee.socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(connection.pointee.socket, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        // In single mode a reply that cannot be read makes libspeechd drop the stream.
        func gone() -> Bool { SpeechdConnector.eventThreadEnded(connection) }

        guard let moduleList = spd_list_modules(connection) else {
            throw .unavailable(gone() ? "speech-dispatcher closed the connection"
                                      : "speech-dispatcher did not list its output modules")
        }
        var modules: [String] = []
        var index = 0
        while let module = moduleList[index] {
            modules.append(String(cString: module))
            index += 1
        }
        free_spd_modules(moduleList)

        var voices: [Voice] = []
        for module in modules {
            guard spd_set_output_module(connection, module) == 0 else {
                if gone() { throw .unavailable("speech-dispatcher closed the connection") }
                continue
            }
            guard let list = spd_list_synthesis_voices(connection) else {
                if gone() { throw .unavailable("speech-dispatcher closed the connection") }
                continue
            }
            defer { free_spd_voices(list) }
            var index = 0
            while let entry = list[index] {
                index += 1
                guard let namePointer = entry.pointee.name else { continue }
                let name = String(cString: namePointer)
                let language = entry.pointee.language.map { String(cString: $0) } ?? ""
                let variant = entry.pointee.variant.map { String(cString: $0) } ?? "none"
                voices.append(Voice(id: "\(module)/\(name)", name: name, language: language, variant: variant,
                                    engine: module))
            }
        }
        return voices
    }
}
