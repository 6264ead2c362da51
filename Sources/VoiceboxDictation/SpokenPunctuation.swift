/// Spoken punctuation for dictation: the recognizer hears "comma" or "new paragraph" as words;
/// this turns them into the marks they name (English words, so English dictation only).
///
/// - "comma" `,`, "period" / "full stop" `.`, "question mark" `?`, "exclamation mark" /
///   "exclamation point" `!`, "colon" `:`, "new line" a line break, "new paragraph" a blank line.
/// - Words are matched whatever their case (the recognizer gives lower case).
/// - It only finds the marks: spacing and capitals are `DictatedText.render`'s.
enum SpokenPunctuation {
    /// The spoken forms, longest first so that "full stop" wins over a lone "stop".
    static let phrases: [(words: [String], mark: DictatedText.Mark)] = [
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

    /// `words` with each spoken mark made a mark.
    static func apply(_ words: [String]) -> [DictatedText.Token] {
        let lowered = words.map { $0.lowercased() }
        var tokens: [DictatedText.Token] = []
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
}
