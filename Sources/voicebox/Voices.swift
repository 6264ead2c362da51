import VoiceboxBus
import VoiceboxContract

extension Invocation {
    static func parseVoices(_ reader: inout ArgumentReader) throws(UsageError) -> Command {
        var language: String?
        var json = false
        while let item = reader.next() {
            switch item {
            case .flag("--json"): json = true
            case .operand(let tag) where language == nil: language = tag
            case .operand(let extra): throw reader.unexpected(extra)
            case .flag(let flag): throw reader.unknown(flag)
            }
        }
        return .voices(language: language ?? "", json: json)
    }
}

extension Client {
    /// `voices [LANG]`: id, name, language, variant, tab-separated, best match first.
    func voices(_ language: String, json: Bool) async throws -> ExitStatus {
        let voices = try await checked { () async throws(DBusError) in try await speech.call(Speech1.listVoices, language) }
        if json {
            Output.json(voices.map { ["id": $0.id, "name": $0.name, "language": $0.language, "variant": $0.variant, "engine": $0.engine] })
        } else {
            for voice in voices { Output.line([voice.id, voice.name, voice.language, voice.variant].joined(separator: "\t")) }
        }
        return .ok
    }
}
