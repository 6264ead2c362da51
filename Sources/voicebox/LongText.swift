import VoiceboxContract

/// Text longer than Speak takes (65,536 bytes of UTF-8) is spoken as several utterances, split
/// at sentence ends: each piece as long as fits, ending at the last sentence end within the
/// limit (or, in a sentence longer than that, at the last space; in a word longer than that,
/// at the last whole character).
enum LongText {
    static let limit = Speech1.maximumTextBytes

    static func split(_ text: String, limit: Int = limit) -> [String] {
        var pieces: [String] = []
        var rest = Substring(text)
        while rest.utf8.count > limit {
            // The longest prefix of whole characters within the limit.
            var end = rest.startIndex
            var bytes = 0
            for index in rest.indices {
                let size = rest[index].utf8.count
                guard bytes + size <= limit else { break }
                bytes += size
                end = rest.index(after: index)
            }
            // A character longer than the limit (a long emoji sequence in a tiny test limit) goes whole.
            if end == rest.startIndex { end = rest.index(after: end) }
            let window = rest[..<end]
            let cut = lastSentenceEnd(in: window) ?? window.lastIndex(where: \.isWhitespace).map { window.index(after: $0) } ?? end
            let piece = rest[..<cut].trimmingTrailingWhitespace
            if !piece.isEmpty { pieces.append(String(piece)) }
            rest = rest[cut...].drop(while: \.isWhitespace)
        }
        let last = rest.trimmingTrailingWhitespace
        if !last.isEmpty || pieces.isEmpty { pieces.append(String(last)) }
        return pieces
    }

    /// Just after the last sentence end in `window`: `.` `?` `!` `…` (and closing quotes or
    /// brackets after them) followed by white space, a line break, or the CJK full stops.
    static func lastSentenceEnd(in window: Substring) -> Substring.Index? {
        var index = window.endIndex
        while index > window.startIndex {
            let previous = window.index(before: index)
            let character = window[previous]
            if "。！？".contains(character) || character == "\n" { return index }
            if character.isWhitespace, previous > window.startIndex {
                var mark = window.index(before: previous)
                while mark > window.startIndex, "\"'”’)]»".contains(window[mark]) { mark = window.index(before: mark) }
                if ".?!…".contains(window[mark]) { return index }
            }
            index = previous
        }
        return nil
    }
}

extension Substring {
    var trimmingTrailingWhitespace: Substring {
        var end = endIndex
        while end > startIndex, self[index(before: end)].isWhitespace { end = index(before: end) }
        return self[..<end]
    }
}
