/// SSML read again to put our marks in: the caller's document, already checked by `SSMLDocument`,
/// so a plain lexer is enough (tags, end tags, comments, CDATA, the XML declaration, text).
extension MarkupBuilder {
    /// Elements whose content gets no marks of ours: SSML allows no <mark> in them, and what they
    /// hold is not read as it is written (say-as spells it out, sub and phoneme replace it).
    static let unmarkable: Set<String> = ["say-as", "sub", "phoneme", "token", "w", "desc", "audio", "lexicon",
                                          "meta", "metadata"]
    /// Elements that begin (and end) a sentence or paragraph.
    static let sentences: Set<String> = ["s", "p", "sentence", "paragraph"]
    /// Elements after which espeak-ng reports a mark even after a full stop: a mark there stays.
    static let markKeepers: Set<String> = ["s", "p", "sentence", "paragraph", "break"]

    /// `scalars` is the document; `offset` turns an index in it into the caller's offset.
    mutating func rewrite(ssml scalars: [Unicode.Scalar], offset: Int, callerMarks: [String]) {
        var index = 0
        var unmarked = 0    // open unmarkable elements
        var callerMark = 0  // the next of the caller's marks
        var open: [String] = []
        while index < scalars.count {
            let scalar = scalars[index]
            if Self.starts(scalars, index, "<!--") {
                index = Self.end(scalars, after: index, "-->")  // comments are left out
            } else if Self.starts(scalars, index, "<?") {
                index = Self.end(scalars, after: index, "?>")   // so is the XML declaration
            } else if Self.starts(scalars, index, "<![CDATA[") {
                let end = Self.end(scalars, after: index, "]]>")
                appendFlat(scalars[index..<end])
                index = end
            } else if scalar == "<" {
                let end = Self.tagEnd(scalars, index)
                let closing = Self.starts(scalars, index, "</")
                let kind = Self.kind(scalars, from: index + (closing ? 2 : 1))
                let empty = !closing && end >= 2 && scalars[end - 2] == "/"
                if closing {
                    if open.popLast().map(Self.unmarkable.contains) == true { unmarked -= 1 }
                    appendFlat(scalars[index..<end])
                } else if kind == "mark", callerMark < callerMarks.count {
                    marks.append(.caller(name: callerMarks[callerMark], at: index + offset))
                    callerMark += 1
                    if empty {
                        appendCallerMark(Array("<mark name=\"\(SpeechMarkup.markName(marks.count - 1))\"/>".unicodeScalars))
                    } else {  // <mark name="x"></mark>: left where it is, its end tag follows
                        output += "<mark name=\"\(SpeechMarkup.markName(marks.count - 1))\">".unicodeScalars
                    }
                } else {
                    appendFlat(scalars[index..<end])
                }
                if !closing && !empty {
                    open.append(kind)
                    if Self.unmarkable.contains(kind) { unmarked += 1 }
                }
                if Self.sentences.contains(kind) { sentenceNext = true }
                if Self.markKeepers.contains(kind) {
                    stopAt = nil
                    sinceStop = []
                }
                index = end
            } else if Self.isSpace(scalar) {
                output.append(" ")
                index += 1
            } else {
                let start = index
                while index < scalars.count, !Self.isSpace(scalars[index]), scalars[index] != "<" { index += 1 }
                let word = scalars[start..<index]
                beginWord(start + offset, index + offset, first: word.first!, markable: unmarked == 0 && Self.isSpoken(word),
                          endsSentence: Self.endsSentence(Self.withoutReferences(word)))
                let stop = Self.stopStart(word)
                output += word[..<stop]
                if stop < word.endIndex { stopAt = output.count }
                output += word[stop...]
            }
        }
    }

    /// Markup copied with its white space made single spaces (XML reads them so in tags and values).
    private mutating func appendFlat(_ scalars: ArraySlice<Unicode.Scalar>) {
        for scalar in scalars { output.append(Self.isSpace(scalar) ? " " : scalar) }
    }

    /// The element's name in lower case without a namespace prefix, as espeak-ng reads it.
    static func kind(_ scalars: [Unicode.Scalar], from start: Int) -> String {
        var end = start
        while end < scalars.count, !isSpace(scalars[end]), scalars[end] != ">", scalars[end] != "/" { end += 1 }
        let name = String(String.UnicodeScalarView(scalars[start..<end])).lowercased()
        return name.split(separator: ":").last.map(String.init) ?? name
    }

    /// Just past the `>` that ends the tag at `start` (quotes respected: `>` may be in a value).
    static func tagEnd(_ scalars: [Unicode.Scalar], _ start: Int) -> Int {
        var quote: Unicode.Scalar?
        var index = start + 1
        while index < scalars.count {
            let scalar = scalars[index]
            index += 1
            if let open = quote {
                if scalar == open { quote = nil }
            } else if scalar == "\"" || scalar == "'" {
                quote = scalar
            } else if scalar == ">" {
                return index
            }
        }
        return scalars.count
    }

    /// Just past `terminator`, searched from `start`; the end of the text if it is missing.
    static func end(_ scalars: [Unicode.Scalar], after start: Int, _ terminator: String) -> Int {
        let wanted = Array(terminator.unicodeScalars)
        var index = start
        while index + wanted.count <= scalars.count {
            if scalars[index..<(index + wanted.count)].elementsEqual(wanted) { return index + wanted.count }
            index += 1
        }
        return scalars.count
    }

    static func starts(_ scalars: [Unicode.Scalar], _ index: Int, _ prefix: String) -> Bool {
        let wanted = Array(prefix.unicodeScalars)
        return index + wanted.count <= scalars.count && scalars[index..<(index + wanted.count)].elementsEqual(wanted)
    }

    /// A word's text with references (`&quot;`, `&#8221;`) dropped: the closing quote a word
    /// ends with may be written as one.
    static func withoutReferences(_ word: ArraySlice<Unicode.Scalar>) -> ArraySlice<Unicode.Scalar> {
        var word = word
        while word.last == ";", let ampersand = word.lastIndex(of: "&") {
            word = word[word.startIndex..<ampersand]
        }
        return word
    }
}
