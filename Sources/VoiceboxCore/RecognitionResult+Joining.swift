extension RecognitionResult {
    /// Several results as one: texts joined with spaces, words in order, and the confidence of
    /// the whole as the mean of all its words' (so it does not shrink with length).
    /// In the core because both an engine (pieces of one utterance) and the service (segments of
    /// a file) join results, and they must agree.
    public init(joining parts: [RecognitionResult]) {
        let spoken = parts.filter { !$0.text.isEmpty }
        guard !spoken.isEmpty else {
            self = .empty
            return
        }
        let words = spoken.flatMap(\.words)
        self.init(text: spoken.map(\.text).joined(separator: " "),
                  confidence: words.isEmpty ? spoken.map(\.confidence).reduce(0, +) / Double(spoken.count)
                                            : Self.meanConfidence(words),
                  words: words)
    }

    public static func meanConfidence(_ words: [RecognizedWord]) -> Double {
        words.isEmpty ? 0 : words.map(\.confidence).reduce(0, +) / Double(words.count)
    }
}
