/// Seeded random texts and SSML documents made of what has broken SSIP clients and
/// speech-dispatcher: line ends of every kind, dot lines and the end marker itself, NUL and other
/// control characters, U+FFFD (what a lone surrogate becomes), long lines, XML fragments. The same
/// seed gives the same corpus, so a failure can be replayed.
public struct SpeechCorpus: Sendable {
    private var rng: SplitMix64

    public init(seed: UInt64) { rng = SplitMix64(state: seed) }

    private mutating func below(_ bound: Int) -> Int { rng.below(bound) }
    private mutating func pick<T>(_ items: [T]) -> T { rng.pick(items) }

    static let textPieces = [
        "\r", "\n", "\r\n", ".", "..", "\r\n.\r\n", "\n.\n", "\r.\r", ".\r\n", "\r\n..\r\n", "\u{0}", "\u{FFFD}",
        "\u{1}", "\u{7}", "\u{8}", "\u{B}", "\u{C}", "\u{1B}[31m", "\u{7F}", "\u{85}", "\u{9F}", "\u{2028}", "\u{2029}",
        "\t", " ", "hello", "world", "café", "日本語", "🎉", "<speak>", "</speak>", "<mark name=\"m\"/>", "&amp;", "&",
        "<", ">", "]]>", "SPEAK", "QUIT", "CANCEL all", "225 OK", "700-a", "\u{200B}", "\u{FEFF}",
    ]

    /// A plain text of 1...`pieces` pieces, sometimes with a line of a few thousand characters.
    public mutating func text(pieces: Int = 24) -> String {
        var text = ""
        for _ in 0..<(1 + below(pieces)) {
            if below(40) == 0 {
                text += String(repeating: pick(["a", ".", "x ", "\u{1}"]), count: 1000 + below(4000))
            } else {
                text += pick(Self.textPieces)
            }
        }
        return text
    }

    static let markNames = ["m1", "a\nb", "a\n.\nb", "a\r.\rb", "", "__spd_x", "a b", "été", "x.y-z", "1a", "a\tb",
                            String(repeating: "m", count: 64), String(repeating: "m", count: 65), String(repeating: "n", count: 1300),
                            "a&#10;.&#10;b", "a&amp;b", "a\u{1}b", "a:b"]
    static let elements = ["s", "p", "emphasis", "prosody", "say-as", "sub", "voice", "lang", "w", "unknown"]

    /// An SSML document of random structure: nested elements (sometimes too deep), marks with good
    /// and bad names, breaks, entities good and bad, attributes, and text from `text()`.
    public mutating func ssml() -> String {
        var body = ""
        var open: [String] = []
        for _ in 0..<(1 + below(30)) {
            switch below(9) {
            case 0:
                let element = pick(Self.elements)
                body += "<\(element)\(below(3) == 0 ? " rate=\"\(pick(["slow", "a\n.\nb", "1%", "&quot;"]))\"" : "")>"
                open.append(element)
            case 1:
                if let element = open.popLast() { body += "</\(element)>" }
            case 2:
                body += "<mark name=\"\(pick(Self.markNames))\"/>"
            case 3:
                body += "<break time=\"\(pick(["200ms", "2s", "10s", "11s", "100000ms", "x", "-1s"]))\"/>"
            case 4:
                body += pick(["&lt;", "&gt;", "&amp;", "&quot;", "&apos;", "&#233;", "&#xE9;", "&#0;", "&#10;", "&nbsp;", "&x;"])
            case 5:
                let depth = pick([5, 31, 33, 200])
                body += String(repeating: "<s>", count: depth) + "deep" + String(repeating: "</s>", count: depth)
            case 6:
                body += pick(["<!-- note -->", "<![CDATA[ a < b ]]>", "<?pi x?>", "<!DOCTYPE x>", "</unopened>"])
            default:
                body += text(pieces: 6)
            }
        }
        if below(4) != 0 { while let element = open.popLast() { body += "</\(element)>" } }
        return below(2) == 0 ? "<speak>\(body)</speak>" : body
    }
}
