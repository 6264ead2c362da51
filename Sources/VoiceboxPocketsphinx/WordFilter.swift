/// Which of pocketsphinx's segments are words, and how to spell them.
enum WordFilter {
    /// The word as the dictionary spells it, or nil for a non-word: sentence marks (<s>, </s>),
    /// silence (<sil>) and fillers ([NOISE], ++BREATH++). Pronunciation variants come back as
    /// "word(2)"; the suffix goes.
    static func spoken(_ segment: String) -> String? {
        guard let first = segment.first, !"<[+".contains(first) else { return nil }
        if segment.last == ")", let open = segment.lastIndex(of: "("), open != segment.startIndex,
           segment[segment.index(after: open)..<segment.index(before: segment.endIndex)].allSatisfy(\.isNumber) {
            return String(segment[..<open])
        }
        return segment
    }
}
