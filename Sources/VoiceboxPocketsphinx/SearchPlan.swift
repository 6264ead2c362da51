import VoiceboxCore

/// What one recognition searches for, checked from its configuration before a model is touched.
enum SearchPlan: Sendable, Equatable {
    /// The n-gram language model (dictation, search).
    case languageModel
    /// A JSGF grammar (given, or the built-in yes/no one).
    case grammar(String)
    /// Keyword spotting; phrases in lower case, words separated by one space.
    case keyphrases([String], threshold: Double)

    /// Throws `RecognitionError` for a search the rules refuse (`checkSearch`).
    init(_ configuration: RecognitionConfiguration) throws {
        do {
            try configuration.checkSearch()
        } catch {
            throw error.recognitionError
        }
        if let grammar = configuration.grammar {
            self = .grammar(grammar)
        } else if let phrases = configuration.keyphrases {
            self = .keyphrases(phrases.map { $0.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ") },
                               threshold: configuration.keyphraseThreshold)
        } else {
            self = configuration.hint == .confirmation ? .grammar(Self.confirmationGrammar) : .languageModel
        }
    }

    static let confirmationGrammar = """
        #JSGF V1.0;
        grammar confirmation;
        public <answer> = \((Confirmation.affirmative + Confirmation.negative).joined(separator: " | "));
        """
}
