import Foundation

/// The user's replacement list: a phrase as the recognizer hears it and what to write instead,
/// e.g. "voice box" → "Voicebox". Read from `$XDG_CONFIG_HOME/voicebox/replacements` (default
/// `~/.config/voicebox/replacements`), one replacement a line:
///
///     voice box = Voicebox
///     # a comment; blank lines are skipped
///     um =
///
/// The phrase is matched as whole words, whatever their case; the replacement (everything after
/// the first `=`, trimmed; it may be empty, which deletes the phrase) is written as it stands,
/// never capitalized. The longest phrase wins where several match.
public struct Replacements: Equatable, Sendable {
    public struct Entry: Equatable, Sendable {
        /// Lower-case words.
        public var phrase: [String]
        public var replacement: String
    }

    /// Longest phrase first.
    public private(set) var entries: [Entry]

    public init(_ pairs: [(phrase: String, replacement: String)] = []) {
        entries = pairs.compactMap { pair in
            let words = pair.phrase.lowercased().split(whereSeparator: \.isWhitespace).map(String.init)
            return words.isEmpty ? nil : Entry(phrase: words, replacement: pair.replacement)
        }.sorted { $0.phrase.count > $1.phrase.count }
    }

    /// A line that is not blank, not a comment and has no `=`: its number and text.
    public struct BadLine: Error, Equatable, Sendable {
        public var number: Int
        public var text: String
    }

    /// Parses the file's text; lines without `=` are returned as `bad` (and skipped).
    public static func parse(_ text: String) -> (replacements: Replacements, bad: [BadLine]) {
        var pairs: [(String, String)] = []
        var bad: [BadLine] = []
        for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            guard let equals = trimmed.firstIndex(of: "="),
                  !trimmed[..<equals].trimmingCharacters(in: .whitespaces).isEmpty else {
                bad.append(BadLine(number: index + 1, text: String(line)))
                continue
            }
            pairs.append((String(trimmed[..<equals]).trimmingCharacters(in: .whitespaces),
                          String(trimmed[trimmed.index(after: equals)...]).trimmingCharacters(in: .whitespaces)))
        }
        return (Replacements(pairs), bad)
    }

    /// Where the list is: `$XDG_CONFIG_HOME/voicebox/replacements`, or `$HOME/.config/...`.
    public static func path(_ environment: [String: String]) -> String? {
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return config + "/voicebox/replacements"
        }
        guard let home = environment["HOME"], !home.isEmpty else { return nil }
        return home + "/.config/voicebox/replacements"
    }

    /// The user's list; empty when there is no file. Unreadable or malformed lines are told
    /// through `warn` (one sentence each), never fatal: dictation goes on without them.
    public static func load(_ environment: [String: String], warn: (String) -> Void) -> Replacements {
        guard let path = path(environment), FileManager.default.fileExists(atPath: path) else { return Replacements() }
        guard let data = FileManager.default.contents(atPath: path) else {
            warn("cannot read \(path): replacements not applied")
            return Replacements()
        }
        let (replacements, bad) = parse(String(decoding: data, as: UTF8.self))
        for line in bad { warn("\(path):\(line.number): not 'phrase = replacement', skipped: \(line.text)") }
        return replacements
    }

    /// `tokens` with every phrase replaced (a phrase never spans a punctuation mark).
    func apply(_ tokens: [DictatedText.Token]) -> [DictatedText.Token] {
        guard !entries.isEmpty else { return tokens }
        var output: [DictatedText.Token] = []
        var index = 0
        next: while index < tokens.count {
            for entry in entries where index + entry.phrase.count <= tokens.count {
                let matches = tokens[index..<index + entry.phrase.count].enumerated().allSatisfy { offset, token in
                    if case .word(let word) = token { word.lowercased() == entry.phrase[offset] } else { false }
                }
                if matches {
                    if !entry.replacement.isEmpty { output.append(.verbatim(entry.replacement)) }
                    index += entry.phrase.count
                    continue next
                }
            }
            output.append(tokens[index])
            index += 1
        }
        return output
    }
}
