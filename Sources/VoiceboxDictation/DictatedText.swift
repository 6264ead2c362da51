/// What dictation writes for what the recognizer heard, in three steps: spoken punctuation
/// (English only), the user's replacements, then capitals: at the start, after a sentence end
/// (`.` `?` `!`) and at the start of a line, and "i" as "I" (English). `literal` leaves the
/// words exactly as heard. A pure function, so the client and the tests use it alike.
public enum DictatedText {
    /// What a spoken word (or two) stands for.
    enum Mark: Equatable {
        case inline(String, endsSentence: Bool)
        case lineBreak(String)
    }

    enum Token: Equatable {
        case word(String)
        case mark(Mark)
        /// A replacement: written as it stands, never capitalized.
        case verbatim(String)
    }

    /// `heard` as dictation writes it. `language`: the recognition's language (BCP-47, as the
    /// service reports it); spoken punctuation and "I" are English rules, so they apply only
    /// to English (or when the language is not known).
    public static func render(_ heard: String, language: String? = nil, literal: Bool = false,
                              replacements: Replacements = Replacements()) -> String {
        guard !literal else { return heard }
        let english = isEnglish(language)
        let words = heard.split(whereSeparator: \.isWhitespace).map(String.init)
        var tokens = english ? SpokenPunctuation.apply(words) : words.map(Token.word)
        tokens = replacements.apply(tokens)
        return write(tokens, english: english)
    }

    static func isEnglish(_ language: String?) -> Bool {
        guard let language, !language.isEmpty else { return true }
        return language.lowercased() == "en" || language.lowercased().hasPrefix("en-") || language.lowercased().hasPrefix("en_")
    }

    static func write(_ tokens: [Token], english: Bool) -> String {
        var output = ""
        var capitalizeNext = true
        func space() {
            if let last = output.last, last != "\n" { output.append(" ") }
        }
        for token in tokens {
            switch token {
            case .word(let word):
                space()
                output.append(capitalizeNext || (english && isPronounI(word)) ? capitalized(word) : word)
                capitalizeNext = false
            case .verbatim(let text):
                space()
                output.append(text)
                capitalizeNext = text.last.map { ".?!".contains($0) } ?? capitalizeNext
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

    /// "i", and its contractions "i'm", "i'll", "i've", "i'd".
    static func isPronounI(_ word: String) -> Bool {
        let lowered = word.lowercased()
        return lowered == "i" || lowered.hasPrefix("i'") || lowered.hasPrefix("i’")
    }

    /// The first letter upper case, the rest as heard.
    static func capitalized(_ word: String) -> String {
        guard let first = word.first else { return word }
        return first.uppercased() + word.dropFirst()
    }
}
