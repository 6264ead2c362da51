public struct RecognizedWord: Sendable, Equatable {
    /// As spelled in the dictionary, without pronunciation variants ("read", not "read(2)").
    public var word: String
    /// Seconds since the first sample the decoder was given.
    public var start: Double
    public var end: Double
    /// 0...1: the engine's posterior probability of this word here (1 when it has none).
    public var confidence: Double

    public init(word: String, start: Double, end: Double, confidence: Double = 1) {
        self.word = word
        self.start = start
        self.end = end
        self.confidence = confidence
    }
}

public struct RecognitionResult: Sendable, Equatable {
    /// The words joined by single spaces; "" when nothing was recognized.
    public var text: String
    /// 0...1: how sure the engine is of `text` (see the engine for its mapping); 0 when `text`
    /// is empty.
    public var confidence: Double
    public var words: [RecognizedWord]

    public init(text: String, confidence: Double, words: [RecognizedWord]) {
        self.text = text
        self.confidence = confidence
        self.words = words
    }

    public static let empty = RecognitionResult(text: "", confidence: 0, words: [])
}
