/// One voice as a Spiel speech provider offers it (org.freedesktop.Speech.Provider's `Voices`,
/// `a(ssstas)`): a name for people, the id Synthesize takes, the output format as GStreamer caps,
/// the feature flags (`SpielFeatures`) and its languages (BCP-47, lower case, the language itself
/// and then each shorter prefix, as other providers list them: libspiel matches them exactly).
public struct ProviderVoice: Sendable, Hashable {
    public var name: String
    public var id: String
    public var outputFormat: String
    public var features: UInt64
    public var languages: [String]

    public init(name: String, id: String, outputFormat: String, features: UInt64, languages: [String]) {
        self.name = name
        self.id = id
        self.outputFormat = outputFormat
        self.features = features
        self.languages = languages
    }

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
