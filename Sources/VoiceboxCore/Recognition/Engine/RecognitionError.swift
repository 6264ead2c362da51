public enum RecognitionError: Error, Sendable, Equatable {
    /// The grammar does not parse or names words the dictionary lacks; the parser's reason.
    case invalidGrammar(String)
    /// No model for this BCP-47 language.
    case unsupportedLanguage(String)
    /// A configuration or argument the engine cannot use, with the reason.
    case invalidArgument(String)
    /// The audio file cannot be read or decoded, with the path and the reason.
    case unreadableAudio(String)
    /// The caller's stream (option `stream`) is not what it must be: not a pipe or stream
    /// socket, an odd byte count, a sample that is not a number. The reason.
    case invalidStream(String)
    /// The engine itself failed (e.g. a model that does not load).
    case engineFailure(String)
}
