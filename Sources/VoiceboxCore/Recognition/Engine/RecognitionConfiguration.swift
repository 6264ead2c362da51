/// What kind of speech to expect: it picks the search the engine runs.
public enum RecognitionHint: String, Sendable, CaseIterable {
    /// Free speech through the language's statistical language model.
    case dictation
    /// Short queries; pocketsphinx treats it like `dictation` (the same language model).
    case search
    /// A yes/no answer: the engine listens only for the words in `Confirmation`.
    case confirmation
}

public struct RecognitionConfiguration: Sendable, Equatable {
    /// BCP-47, compared case-insensitively. An engine may fall back to another region of the
    /// same language (e.g. "en-GB" to "en-US"); a language it has no model for is
    /// `RecognitionError.unsupportedLanguage`.
    public var language: String
    /// A JSGF grammar (the text, not a path); only sentences it accepts can be recognized.
    /// Its words must be in the language's dictionary. `import` statements are refused.
    public var grammar: String?
    /// Phrases to spot in running speech (keyword spotting) instead of transcribing it.
    /// Each is one or more dictionary words; the result lists only the spotted phrases.
    public var keyphrases: [String]?
    /// How readily a keyphrase is reported: a likelihood ratio, smaller spots more (and more
    /// falsely). 1 suits single distinctive words; long phrases want 1e-20 or lower.
    public var keyphraseThreshold: Double
    public var hint: RecognitionHint

    /// Whether the search is the language's statistical language model (dictation, search), the
    /// only one that needs it loaded; grammars, keyphrases and confirmations do not.
    public var usesLanguageModel: Bool { grammar == nil && keyphrases == nil && hint != .confirmation }

    public init(language: String = "en-US", grammar: String? = nil, keyphrases: [String]? = nil,
                keyphraseThreshold: Double = 1, hint: RecognitionHint = .dictation) {
        self.language = language
        self.grammar = grammar
        self.keyphrases = keyphrases
        self.keyphraseThreshold = keyphraseThreshold
        self.hint = hint
    }
}
