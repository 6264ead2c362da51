import VoiceboxContract

extension ProviderVoice {
    /// `voice` rendered by `engine`: its ListVoices name and id.
    public init(_ voice: Voice, engine: RenderEngine) {
        self.init(name: voice.name, id: voice.id, outputFormat: Self.caps(engine), features: engine.features,
                  languages: Self.languages(voice.language))
    }

    /// x-spiel where the engine reports marks (so events can come), raw PCM where it does not.
    public static func caps(_ engine: RenderEngine) -> String {
        let kind = engine.reportsMarks ? "audio/x-spiel" : "audio/x-raw"
        return "\(kind),format=S16LE,channels=\(engine.channels),rate=\(engine.sampleRate)"
    }

    /// "en-GB" → ["en-gb", "en"]; "" → [].
    public static func languages(_ tag: String) -> [String] {
        let subtags = LanguageTag.subtags(tag)
        return (0..<subtags.count).reversed().map { subtags[0...$0].joined(separator: "-") }
    }
}

/// The voices offered, held as the voice list itself (the cache's, shared, not copied) and the
/// engines that render: the provider's `Voices` is made from them when it is read. Held instead as
/// `[ProviderVoice]`, or as the bus's value of it, 13,000 voices cost voiceboxd several MiB.
public struct OfferedVoices: Sendable {
    public let all: [Voice]
    public let engines: [String: RenderEngine]

    public init(all: [Voice] = [], engines: [String: RenderEngine] = [:]) {
        self.all = all
        self.engines = engines
    }

    /// Every voice whose engine renders, in the list's order.
    public var list: [ProviderVoice] {
        // One caps string and one language list per engine and tag, shared by the voices that have them.
        let caps = engines.mapValues { ProviderVoice.caps($0) }
        var languages: [String: [String]] = [:]
        return all.compactMap { voice in
            guard let engine = engines[voice.engine] else { return nil }
            let tags = languages[voice.language] ?? ProviderVoice.languages(voice.language)
            languages[voice.language] = tags
            return ProviderVoice(name: voice.name, id: voice.id, outputFormat: caps[voice.engine]!, features: engine.features,
                                 languages: tags)
        }
    }

    /// The offered voice with this id, and its engine.
    public func voice(withID id: String) -> (Voice, RenderEngine)? {
        // Ids are "<engine>/<name>": the engine's prefix first, so that few ids are made to compare.
        for voice in all where id.hasPrefix(voice.engine) && id.utf8.count == voice.engine.utf8.count + 1 + voice.name.utf8.count {
            if let engine = engines[voice.engine], voice.id == id { return (voice, engine) }
        }
        for voice in all where voice.id == id { return engines[voice.engine].map { (voice, $0) } }  // ids of their own
        return nil
    }

    public var offered: [Voice] { all.filter { engines[$0.engine] != nil } }
}
