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

    /// The same result with its word times `seconds` later: an utterance of a later decoder,
    /// placed in the whole stream.
    public func shifted(by seconds: Double) -> RecognitionResult {
        guard seconds != 0 else { return self }
        var moved = self
        moved.words = words.map { RecognizedWord(word: $0.word, start: $0.start + seconds, end: $0.end + seconds,
                                                 confidence: $0.confidence) }
        return moved
    }
}
