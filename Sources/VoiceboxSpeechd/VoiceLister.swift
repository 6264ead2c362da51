import Synchronization
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads

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
/// The commands (LIST OUTPUT_MODULES, then per module SET SELF OUTPUT_MODULE and LIST
/// SYNTHESIS_VOICES) are pipelined; the big replies (483 KB for espeak-ng) are bounded by silence
/// (`speechd-list` without a byte), not by their total time. speech-dispatcher writes nothing of a
/// list until it has built all of it (measured: 1 s for espeak-ng, 2.4 s on a loaded machine with its
/// debug log on): with the 2 s of `speechd-reply` such a listing failed, was retried, and each
/// attempt held speech-dispatcher's answers to everyone else up for as long. A listing holds up no
/// caller of ours but those waiting for a first list (`--voices-wait`), so it gets 10 s.
final class VoiceLister: Sendable {
    private let configuration: SpeechDispatcherSynthesizer.Configuration
    private let timings: SpeechdTimings
    private let closed = Atomic<Bool>(false)

    init(configuration: SpeechDispatcherSynthesizer.Configuration, timings: SpeechdTimings) {
        self.configuration = configuration
        self.timings = timings
    }

    func close() {
        closed.store(true, ordering: .relaxed)
    }

    func list() async throws -> [Voice] {
        guard !closed.load(ordering: .relaxed) else {
            throw SynthesizerError.unavailable("the synthesizer was shut down")
        }
        return try await SSIPConversation(label: "voicebox.speechd.voices").listVoices(configuration, timings).get()
    }

    /// The output modules, then each one's voices, pipelined.
    fileprivate static func list(on connection: SSIPConnection, client: String,
                                 done: @escaping (Result<[Voice], SynthesizerError>) -> Void) {
        connection.send(SpeechdConnector.clientNameCommand(client: client, component: "voices")) { _ in }
        connection.send(SSIPText.command("LIST", "OUTPUT_MODULES")) { result in
            switch result {
            case .failure(let error):
                done(.failure(error))
            case .success(let reply) where !reply.isSuccess:
                done(.failure(.unavailable("speech-dispatcher did not list its output modules (\(reply.code) \(reply.text))")))
            case .success(let reply):
                listVoices(of: reply.lines, on: connection, done: done)
            }
        }
    }

    private static func listVoices(of modules: [String], on connection: SSIPConnection,
                                   done: @escaping (Result<[Voice], SynthesizerError>) -> Void) {
        guard !modules.isEmpty else { return done(.success([])) }
        var voices: [Voice] = []
        for (index, module) in modules.enumerated() {
            var selected = false
            // Queued behind the previous module's listing, which may take longer than the timeout to
            // arrive: bounded by inactivity too, like the listing itself.
            connection.send(SSIPText.command("SET", "self", "OUTPUT_MODULE", module), inactivityTimeout: true) { result in
                if case .success(let reply) = result { selected = reply.isSuccess }
            }
            connection.send(SSIPText.command("LIST", "SYNTHESIS_VOICES"), inactivityTimeout: true) { result in
                switch result {
                case .failure(let error):
                    return done(.failure(error))
                case .success(let reply):
                    // A module that cannot be selected or listed is left out.
                    if selected && reply.isSuccess {
                        for entry in parseVoiceLines(reply.lines) {
                            voices.append(Voice(id: "\(module)/\(entry.name)", name: entry.name,
                                                language: entry.language, variant: entry.variant, engine: module))
                        }
                    }
                }
                if index == modules.count - 1 { done(.success(voices)) }
            }
        }
    }

    struct Entry: Equatable {
        var name: String
        var language: String
        var variant: String
    }

    /// The data lines of `LIST SYNTHESIS_VOICES`: `name<TAB>language<TAB>variant`, split as libspeechd
    /// splits them (missing fields empty / "none"; nameless lines skipped).
    static func parseVoiceLines(_ lines: [String]) -> [Entry] {
        lines.compactMap { line in
            let fields = line.split(separator: "\t", maxSplits: 3, omittingEmptySubsequences: false)
            guard let name = fields.first, !name.isEmpty else { return nil }
            return Entry(name: String(name), language: fields.count > 1 ? String(fields[1]) : "",
                         variant: fields.count > 2 ? String(fields[2]) : "none")
        }
    }
}

extension SSIPConversation {
    /// Opening may block (autospawn): that holds up only this conversation's own queue.
    fileprivate func listVoices(_ configuration: SpeechDispatcherSynthesizer.Configuration,
                                _ timings: SpeechdTimings) async -> Result<[Voice], SynthesizerError> {
        let opened: SSIPSocket.Opened
        switch SpeechdConnector.open(address: configuration.address, spawnWithin: configuration.autospawn ? timings.start : nil) {
        case .success(let socket): opened = socket
        case .failure(let error): return .failure(error)
        }
        return await converse(on: opened, timeout: timings.list, ended: { .failure(.unavailable($0)) }) { connection, finish in
            VoiceLister.list(on: connection, client: configuration.clientName, done: finish)
        }
    }
}
