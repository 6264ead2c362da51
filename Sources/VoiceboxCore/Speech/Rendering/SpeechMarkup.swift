/// What an output module is given to render an utterance into memory: one SSML document on one
/// line, with marks of ours before every word, so that the module, which reports nothing but SSML
/// marks, tells where each word (and so each sentence) begins in its audio. A caller's own marks
/// are renamed too: nothing the caller wrote reaches the module as a mark name.
///
/// Offsets count characters (Unicode scalars, as GLib and espeak-ng count them) of the text as
/// the caller gave it, markup included for SSML. Marks change nothing in the audio (measured:
/// sd_espeak-ng renders the same samples with and without them). espeak-ng 1.51 drops a mark that
/// follows a full stop ("world. <mark/>This": never reported; after `!`, `?`, `,`, a `<break>`, at
/// the start of an `<s>` or `<p>`, or before a word in lower case, which makes the `.` no stop, it
/// is), so there the marks go before the `.`: reported as the stop's pause begins, a little early,
/// rather than never. Measured: there, and only there, that changes nothing in the audio.
public struct SpeechMarkup: Sendable, Equatable {
    public struct Range: Sendable, Equatable {
        public var start: Int
        public var end: Int
        public init(_ start: Int, _ end: Int) {
            self.start = start
            self.end = end
        }
    }

    public enum Mark: Sendable, Equatable {
        /// A word begins; and with it a sentence, when `sentence` is given.
        case word(Range, sentence: Range?)
        /// The caller's `<mark name>`, where its tag begins.
        case caller(name: String, at: Int)
    }

    /// The document, `<speak>` at its root, without line breaks (so no line of it can end the
    /// module's SPEAK early).
    public let document: String
    /// What mark `vbN` stands for: `marks[N]`.
    public let marks: [Mark]

    /// Our marks' names: "vb" and the index. A caller's names never reach the module.
    public static let markPrefix = "vb"

    public static func markName(_ index: Int) -> String { markPrefix + String(index) }

    /// The mark `name` stands for, if it is one of ours.
    public func mark(named name: String) -> Mark? {
        guard name.hasPrefix(Self.markPrefix), let index = Int(name.dropFirst(Self.markPrefix.count)),
              marks.indices.contains(index) else { return nil }
        return marks[index]
    }

    /// Plain `text` as the caller gave it.
    public init(plain text: String) {
        var builder = MarkupBuilder()
        builder.append(plain: Array(text.unicodeScalars))
        (document, marks) = builder.finish()
    }

    /// SSML the caller gave as `text`, once `SSMLDocument` has accepted it (it is read again here,
    /// trusting that check; its marks are the caller's, in document order).
    public init(ssml checked: SSMLDocument, callerText text: String) {
        let scalars = Array(checked.text.unicodeScalars)
        // SSMLDocument wraps a fragment in <speak>: offsets are the caller's, without it.
        let offset = scalars.count == text.unicodeScalars.count ? 0 : -"<speak>".unicodeScalars.count
        var builder = MarkupBuilder()
        builder.rewrite(ssml: scalars, offset: offset, callerMarks: checked.marks)
        (document, marks) = builder.finish()
    }
}

/// Builds a `SpeechMarkup`: the words as they are found, marks before the markable ones, and at the
/// end the sentences they make.
struct MarkupBuilder {
    struct Word {
        var range: SpeechMarkup.Range
        var mark: Int?
        var startsSentence: Bool
    }

    var output: [Unicode.Scalar] = []
    /// Where, in `output`, the last word's closing `.` begins: the next word's mark goes there.
    var stopAt: Int?
    /// The caller's marks written since that `.`, where they are in `output`: they move before it
    /// too if a word that makes it a stop follows.
    var sinceStop: [Range<Int>] = []
    var marks: [SpeechMarkup.Mark] = []
    var words: [Word] = []
    /// The next word begins a sentence (the first one; one after `.`, `!`, `?`; one in a new <s> or <p>).
    var sentenceNext = true

    /// Plain text: escaped for XML, controls and line ends as spaces, a mark before every word.
    mutating func append(plain scalars: [Unicode.Scalar]) {
        output += "<speak>".unicodeScalars
        var index = 0
        while index < scalars.count {
            if Self.isSpace(scalars[index]) {
                output.append(" ")
                index += 1
                continue
            }
            let start = index
            while index < scalars.count, !Self.isSpace(scalars[index]) { index += 1 }
            let word = scalars[start..<index]
            beginWord(start, index, first: word.first!, markable: Self.isSpoken(word), endsSentence: Self.endsSentence(word))
            let stop = Self.stopStart(word)
            for scalar in word[..<stop] { appendEscaped(scalar) }
            if stop < word.endIndex { stopAt = output.count }
            for scalar in word[stop...] { appendEscaped(scalar) }
        }
        output += "</speak>".unicodeScalars
    }

    /// Records a word of `start..<end` (its first character `first`) and writes its mark when it
    /// gets one: before the last word's closing `.` when this word makes that a full stop.
    mutating func beginWord(_ start: Int, _ end: Int, first: Unicode.Scalar, markable: Bool, endsSentence: Bool) {
        var word = Word(range: .init(start, end), mark: nil, startsSentence: sentenceNext)
        sentenceNext = endsSentence
        if let at = stopAt, !first.properties.isLowercase {
            // The caller's marks since the stop first, then this word's, all before the `.`.
            var moved: [Unicode.Scalar] = []
            for range in sinceStop.reversed() {
                moved.insert(contentsOf: output[range], at: 0)
                output.removeSubrange(range)
            }
            if markable { moved += Self.markTag(marks.count) }
            output.insert(contentsOf: moved, at: at)
        } else if markable {
            output += Self.markTag(marks.count)
        }
        if markable {
            word.mark = marks.count
            marks.append(.word(word.range, sentence: nil))  // the sentence is known at the end
        }
        stopAt = nil
        sinceStop = []
        words.append(word)
    }

    /// One of the caller's marks, where it is (it may move before a stop: `beginWord`).
    mutating func appendCallerMark(_ tag: [Unicode.Scalar]) {
        if stopAt != nil { sinceStop.append(output.count..<(output.count + tag.count)) }
        output += tag
    }

    static func markTag(_ index: Int) -> [Unicode.Scalar] {
        Array("<mark name=\"\(SpeechMarkup.markName(index))\"/>".unicodeScalars)
    }

    /// Where the closing `.`s of `word` begin (before closing quotes, brackets or references
    /// such as `&quot;`); its end when it has none.
    static func stopStart(_ word: ArraySlice<Unicode.Scalar>) -> Int {
        let closing: Set<Unicode.Scalar> = ["\"", "'", ")", "]", "}", "»", "\u{201D}", "\u{2019}"]
        var end = word.endIndex
        while end > word.startIndex {
            if closing.contains(word[end - 1]) {
                end -= 1
            } else if word[end - 1] == ";", let ampersand = word[..<end].lastIndex(of: "&") {
                end = ampersand
            } else {
                break
            }
        }
        var start = end
        while start > word.startIndex, word[start - 1] == "." { start -= 1 }
        return start < end ? start : word.endIndex
    }

    mutating func appendEscaped(_ scalar: Unicode.Scalar) {
        switch scalar {
        case "&": output += "&amp;".unicodeScalars
        case "<": output += "&lt;".unicodeScalars
        case ">": output += "&gt;".unicodeScalars
        default: output.append(Self.isControl(scalar) ? " " : scalar)
        }
    }

    /// The document and the marks, each word that begins a sentence given the sentence's range
    /// (to the end of its last word).
    mutating func finish() -> (String, [SpeechMarkup.Mark]) {
        for index in words.indices where words[index].startsSentence {
            var last = index
            while last + 1 < words.count, !words[last + 1].startsSentence { last += 1 }
            let range = SpeechMarkup.Range(words[index].range.start, words[last].range.end)
            if let mark = words[index].mark { marks[mark] = .word(words[index].range, sentence: range) }
        }
        return (String(String.UnicodeScalarView(output)), marks)
    }

    /// Whether a word says something: punctuation alone ("." or "—" between spaces) gets no mark.
    static func isSpoken(_ word: ArraySlice<Unicode.Scalar>) -> Bool {
        word.contains { $0.properties.isAlphabetic || $0.properties.numericType != nil || $0 == "&" }
    }

    /// White space, line ends and control characters: they separate words.
    static func isSpace(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.isWhitespace || isControl(scalar)
    }

    /// C0, DEL and C1 (tab and line ends included: the document has none).
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        default: false
        }
    }

    /// A word that ends a sentence: its last letter `.`, `!`, `?` or their like, perhaps followed by
    /// closing quotes or brackets.
    static func endsSentence(_ word: ArraySlice<Unicode.Scalar>) -> Bool {
        let closing: Set<Unicode.Scalar> = ["\"", "'", ")", "]", "}", "»", "\u{201D}", "\u{2019}", "\u{300D}", "\u{300F}"]
        let terminal: Set<Unicode.Scalar> = [".", "!", "?", "\u{2026}", "\u{3002}", "\u{FF01}", "\u{FF1F}", "\u{061F}", "\u{0964}"]
        guard let last = word.reversed().first(where: { !closing.contains($0) }) else { return false }
        return terminal.contains(last)
    }
}
