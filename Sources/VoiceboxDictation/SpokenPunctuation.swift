/// Spoken punctuation for dictation: the recognizer hears "comma" or "new paragraph" as words;
/// this turns them into the marks they name. A pure function, so the client and the tests can
/// use it alike.
///
/// - "comma" `,`, "period" / "full stop" `.`, "question mark" `?`, "exclamation mark" /
///   "exclamation point" `!`, "colon" `:`, "new line" a line break, "new paragraph" a blank line.
/// - No space before a mark or after a line break; a capital letter at the start, after a
///   sentence end (`.` `?` `!`) and at the start of a line.
/// - Words are matched whatever their case (the recognizer gives lower case).
/// - Text that contains none of these words comes out exactly as it went in, and `literal`
///   turns the whole thing off.
public enum SpokenPunctuation {
    /// What a spoken word (or two) stands for.
    enum Mark: Equatable {
        case inline(String, endsSentence: Bool)
        case lineBreak(String)
    }

    /// The spoken forms, longest first so that "full stop" wins over a lone "stop".
    static let phrases: [(words: [String], mark: Mark)] = [
        (["full", "stop"], .inline(".", endsSentence: true)),
        (["question", "mark"], .inline("?", endsSentence: true)),
        (["exclamation", "mark"], .inline("!", endsSentence: true)),
        (["exclamation", "point"], .inline("!", endsSentence: true)),
        (["new", "line"], .lineBreak("\n")),
        (["new", "paragraph"], .lineBreak("\n\n")),
        (["comma"], .inline(",", endsSentence: false)),
        (["period"], .inline(".", endsSentence: true)),
        (["colon"], .inline(":", endsSentence: false)),
    ]

    enum Token: Equatable {
        case word(String)
        case mark(Mark)
    }

    /// `text` with its spoken punctuation written out.
    public static func apply(_ text: String, literal: Bool = false) -> String {
        guard !literal else { return text }
        let tokens = tokenize(text)
        guard tokens.contains(where: { if case .mark = $0 { true } else { false } }) else { return text }
        return render(tokens)
    }

    static func tokenize(_ text: String) -> [Token] {
        let words = text.split(whereSeparator: \.isWhitespace).map(String.init)
        let lowered = words.map { $0.lowercased() }
        var tokens: [Token] = []
        var index = 0
        next: while index < words.count {
            for phrase in phrases where index + phrase.words.count <= words.count {
                if Array(lowered[index..<index + phrase.words.count]) == phrase.words {
                    tokens.append(.mark(phrase.mark))
                    index += phrase.words.count
                    continue next
                }
            }
            tokens.append(.word(words[index]))
            index += 1
        }
        return tokens
    }

    static func render(_ tokens: [Token]) -> String {
        var output = ""
        var capitalizeNext = true
        for token in tokens {
            switch token {
            case .word(let word):
                if let last = output.last, last != "\n" { output.append(" ") }
                output.append(capitalizeNext ? capitalized(word) : word)
                capitalizeNext = false
            case .mark(.inline(let mark, let endsSentence)):
                output.append(mark)
                if endsSentence { capitalizeNext = true }
            case .mark(.lineBreak(let breakText)):
                output.append(breakText)
                capitalizeNext = true
            }
        }
        return output
    }

    /// The first letter upper case, the rest as heard.
    static func capitalized(_ word: String) -> String {
        guard let first = word.first else { return word }
        return first.uppercased() + word.dropFirst()
    }
}
