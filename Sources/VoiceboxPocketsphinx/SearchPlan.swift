import VoiceboxCore

/// What one recognition searches for, checked from its configuration before a model is touched.
enum SearchPlan: Sendable, Equatable {
    /// The n-gram language model (dictation, search).
    case languageModel
    /// A JSGF grammar (given, or the built-in yes/no one).
    case grammar(String)
    /// Keyword spotting; phrases in lower case, words separated by one space.
    case keyphrases([String], threshold: Double)

    init(_ configuration: RecognitionConfiguration) throws {
        let hint = configuration.hint
        switch (configuration.grammar, configuration.keyphrases) {
        case (.some, .some):
            throw RecognitionError.invalidArgument("a grammar and keyphrases cannot be combined")
        case (.some(let grammar), nil):
            guard hint != .confirmation else {
                throw RecognitionError.invalidArgument("the confirmation hint brings its own grammar")
            }
            try Self.check(grammar: grammar)
            self = .grammar(grammar)
        case (nil, .some(let phrases)):
            guard hint != .confirmation else {
                throw RecognitionError.invalidArgument("the confirmation hint cannot spot keyphrases")
            }
            self = .keyphrases(try Self.normalize(phrases),
                               threshold: try Self.check(threshold: configuration.keyphraseThreshold))
        case (nil, nil):
            self = hint == .confirmation ? .grammar(Self.confirmationGrammar) : .languageModel
        }
    }

    var needsLanguageModel: Bool { self == .languageModel }

    static let confirmationGrammar = """
        #JSGF V1.0;
        grammar confirmation;
        public <answer> = \((Confirmation.affirmative + Confirmation.negative).joined(separator: " | "));
        """

    private static func check(grammar: String) throws {
        guard grammar.contains(where: { !$0.isWhitespace }) else {
            throw RecognitionError.invalidGrammar("the grammar is empty")
        }
        // sphinxbase would look imported grammars up in the daemon's working directory.
        if grammar.firstMatch(of: #/(?m)^\s*import\s*</#) != nil {
            throw RecognitionError.invalidGrammar("import statements are not supported")
        }
    }

    private static func normalize(_ phrases: [String]) throws -> [String] {
        guard !phrases.isEmpty else { throw RecognitionError.invalidArgument("no keyphrases given") }
        return try phrases.map { phrase in
            // The phrases go to pocketsphinx as lines of a file, "phrase /threshold/".
            if phrase.contains(where: { $0 == "/" || $0.isNewline || $0.asciiValue.map { $0 < 0x20 } == true }) {
                throw RecognitionError.invalidArgument("a keyphrase cannot contain '/' or control characters: \(phrase)")
            }
            let words = phrase.lowercased().split(whereSeparator: \.isWhitespace)
            guard !words.isEmpty else { throw RecognitionError.invalidArgument("a keyphrase is empty") }
            return words.joined(separator: " ")
        }
    }

    private static func check(threshold: Double) throws -> Double {
        guard threshold.isFinite, threshold > 0 else {
            throw RecognitionError.invalidArgument("the keyphrase threshold must be positive, not \(threshold)")
        }
        return threshold
    }
}
