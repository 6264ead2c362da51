import VoiceboxContract

/// What can be wrong with the search a configuration asks for: its grammar, keyphrases and hint.
/// The rules live here once; RecognizeOptions applies them to a caller's options (with the
/// service's limits, naming the option) and an engine to its configuration (as a
/// `RecognitionError`), so that both refuse exactly the same searches.
public enum SearchFault: Error, Sendable, Equatable {
    case grammarAndKeyphrases
    case confirmationWithGrammar
    case confirmationWithKeyphrases
    case emptyGrammar
    case grammarTooLarge(bytes: Int, limit: Int)
    /// sphinxbase would look imported grammars up in the daemon's working directory.
    case grammarImports
    case noKeyphrases
    case tooManyKeyphrases(count: Int, limit: Int)
    case emptyKeyphrase
    /// The engine keeps phrases one a line, "phrase/threshold/".
    case keyphraseCharacters(String)
    case keyphraseThreshold(Double)

    /// For a caller of Recognize: the option at fault by its name.
    public var optionError: VoiceboxError {
        switch self {
        case .grammarAndKeyphrases:
            .invalidArgument("options 'grammar' and 'keyphrases' contradict each other: give one")
        case .confirmationWithGrammar, .confirmationWithKeyphrases:
            .invalidArgument("option 'hint' confirmation brings its own grammar: it takes no 'grammar' or 'keyphrases'")
        case .emptyGrammar:
            .invalidArgument("option 'grammar' is empty")
        case .grammarTooLarge(let bytes, let limit):
            .init(.tooLarge, "option 'grammar' is \(bytes) bytes; the limit is \(limit)")
        case .grammarImports:
            // As RecognitionFault words the engine's invalidGrammar.
            .invalidArgument("option 'grammar' is not a usable JSGF grammar: import statements are not supported")
        case .noKeyphrases:
            .invalidArgument("option 'keyphrases' is empty")
        case .tooManyKeyphrases(let count, let limit):
            .init(.tooLarge, "option 'keyphrases' has \(count) phrases; the limit is \(limit)")
        case .emptyKeyphrase:
            .invalidArgument("option 'keyphrases' holds an empty phrase")
        case .keyphraseCharacters(let phrase):
            .invalidArgument("option 'keyphrases': a phrase cannot contain '/' or control characters: '\(phrase)'")
        case .keyphraseThreshold(let threshold):
            .invalidArgument("the keyphrase threshold must be positive, not \(threshold)")
        }
    }

    /// For a user of the engine API.
    public var recognitionError: RecognitionError {
        switch self {
        case .grammarAndKeyphrases: .invalidArgument("a grammar and keyphrases cannot be combined")
        case .confirmationWithGrammar: .invalidArgument("the confirmation hint brings its own grammar")
        case .confirmationWithKeyphrases: .invalidArgument("the confirmation hint cannot spot keyphrases")
        case .emptyGrammar: .invalidGrammar("the grammar is empty")
        case .grammarTooLarge(let bytes, let limit): .invalidArgument("the grammar is \(bytes) bytes; the limit is \(limit)")
        case .grammarImports: .invalidGrammar("import statements are not supported")
        case .noKeyphrases: .invalidArgument("no keyphrases given")
        case .tooManyKeyphrases(let count, let limit): .invalidArgument("\(count) keyphrases; the limit is \(limit)")
        case .emptyKeyphrase: .invalidArgument("a keyphrase is empty")
        case .keyphraseCharacters(let phrase):
            .invalidArgument("a keyphrase cannot contain '/' or control characters: \(phrase)")
        case .keyphraseThreshold(let threshold):
            .invalidArgument("the keyphrase threshold must be positive, not \(threshold)")
        }
    }
}

extension RecognitionConfiguration {
    /// Whether a JSGF grammar has an `import` statement anywhere: a statement is what follows the
    /// start, a ";" or a comment, so `grammar g; import <a.b>;` on one line counts (pocketsphinx
    /// then reads a.gram from the disk, from "/": any file of the user's, or a FIFO that hangs the
    /// worker). One pass, linear in the grammar's length.
    static func imports(_ grammar: String) -> Bool {
        var statementStart = true  // only whitespace and comments since the last ";"
        var scalars = grammar.unicodeScalars[...]
        while let scalar = scalars.first {
            if scalars.starts(with: "//".unicodeScalars) {
                scalars = scalars.drop { $0 != "\n" }
                continue
            }
            if scalars.starts(with: "/*".unicodeScalars) {
                scalars = scalars.dropFirst(2)
                while !scalars.isEmpty, !scalars.starts(with: "*/".unicodeScalars) { scalars = scalars.dropFirst() }
                scalars = scalars.dropFirst(2)
                continue
            }
            if scalar == ";" {
                statementStart = true
            } else if !scalar.properties.isWhitespace {
                if statementStart, scalars.starts(with: "import".unicodeScalars) {
                    let next = scalars.dropFirst(6).first
                    if next == nil || !(next!.properties.isAlphabetic || ("0"..."9").contains(next!) || next == "_") { return true }
                }
                statementStart = false
            }
            scalars = scalars.dropFirst()
        }
        return false
    }

    /// Whether the grammar, keyphrases and hint make one well-formed search. The limits are the
    /// service's (an engine takes any size); they are checked before the grammar is scanned.
    public func checkSearch(maxGrammarBytes: Int? = nil, maxKeyphrases: Int? = nil) throws(SearchFault) {
        if grammar != nil && keyphrases != nil { throw .grammarAndKeyphrases }
        if hint == .confirmation {
            if grammar != nil { throw .confirmationWithGrammar }
            if keyphrases != nil { throw .confirmationWithKeyphrases }
        }
        if let grammar {
            guard grammar.contains(where: { !$0.isWhitespace }) else { throw .emptyGrammar }
            let bytes = grammar.utf8.count
            if let maxGrammarBytes, bytes > maxGrammarBytes { throw .grammarTooLarge(bytes: bytes, limit: maxGrammarBytes) }
            if Self.imports(grammar) { throw .grammarImports }
        }
        if let keyphrases {
            guard !keyphrases.isEmpty else { throw .noKeyphrases }
            if let maxKeyphrases, keyphrases.count > maxKeyphrases {
                throw .tooManyKeyphrases(count: keyphrases.count, limit: maxKeyphrases)
            }
            for phrase in keyphrases {
                guard phrase.contains(where: { !$0.isWhitespace }) else { throw .emptyKeyphrase }
                guard !phrase.contains(where: { $0 == "/" || $0.isNewline || ($0.asciiValue ?? 0x20) < 0x20 }) else {
                    throw .keyphraseCharacters(phrase)
                }
            }
            guard keyphraseThreshold.isFinite, keyphraseThreshold > 0 else { throw .keyphraseThreshold(keyphraseThreshold) }
        }
    }
}
