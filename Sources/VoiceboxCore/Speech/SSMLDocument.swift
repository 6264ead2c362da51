/// A caller's SSML, checked before anything of it reaches speech-dispatcher.
///
/// speech-dispatcher 0.11 trusts what it is given: the output module reports every `<mark>` back to
/// the server as a line of its own, so a mark name holding a line break is read as two replies (bogus
/// SpeechMark signals), one holding a line of only `.` ends the module's reply early and freezes speech
/// for every client until the server is restarted, and so does a mark name of about 1,280 bytes
/// (measured with 0.11.4 and espeak-ng 1.51). Deep nesting and long breaks make a short document hold
/// the queue for minutes of silence (9,000 nested `<s>`: over 90 s; each level adds about 80 ms).
/// espeak-ng reads tags without regard to case (`<MARK NAME=…>` is a mark) and finds an attribute by
/// searching the tag's text for ` name=`, inside other attributes' values too. So the rules below
/// apply to element and attribute names in any case, and a value that holds what reads as another
/// attribute is refused. It reads a value up to the next double quote, whatever quote opened it, so
/// a mark's name must be in double quotes. speech-dispatcher opens an `<audio src>` itself, in the
/// server (a pipe there blocks it for good; any file of the user is played in full), so `<audio>` and
/// `<lexicon>` (a URI too) are refused.
/// So the document must be well-formed XML within these bounds, or it is refused with the reason.
public struct SSMLDocument: Sendable, Equatable {
    /// Elements inside one another, `<speak>` included.
    public static let maximumDepth = 32
    /// Elements in all. 4,000 marks begin to be spoken within 0.34 s.
    public static let maximumElements = 4_096
    public static let maximumMarkNameBytes = 64
    /// An element's or attribute's name: espeak-ng reads the markup of elements it does not know
    /// out loud (a 20 KB element name spoke for minutes).
    public static let maximumNameBytes = 64
    /// Attributes on one element (SSML's elements have at most six, `<speak>`'s namespaces aside).
    public static let maximumAttributes = 16
    /// One attribute's value (rates, pitches, voice names, URIs are short): espeak-ng reads a long
    /// `<prosody rate>` out, 65 KB of it for 21 s, holding every other caller's speech.
    public static let maximumAttributeBytes = 256
    /// One `<break time>`, and all of a document's together.
    public static let maximumBreakSeconds = 10.0
    public static let maximumTotalBreakSeconds = 60.0
    /// What a `<break>` without a time counts for in the total.
    public static let untimedBreakSeconds = 1.0

    /// What is sent: the caller's text, wrapped in `<speak>` when it is not a whole document.
    public let text: String
    /// The mark names, in document order.
    public let marks: [String]

    public init(_ text: String) throws(VoiceboxError) {
        self.text = Self.isWholeDocument(text) ? text : "<speak>\(text)</speak>"
        var reader = SSMLReader(self.text)
        do {
            try reader.readDocument()
        } catch {
            throw .invalidArgument(error.message(at: reader.location))
        }
        marks = reader.marks
    }

    /// Whether `text` is a document of its own: `<speak>` (or a DOCTYPE, to be refused) first, after
    /// any XML declaration and comments. Anything else is wrapped in `<speak>`.
    static func isWholeDocument(_ text: String) -> Bool {
        var rest = Substring(text)
        while true {
            rest = rest.drop { $0.isWhitespace }
            if rest.hasPrefix("<?xml"), let end = rest.firstRange(of: "?>") {
                rest = rest[end.upperBound...]
            } else if rest.hasPrefix("<!--"), let end = rest.firstRange(of: "-->") {
                rest = rest[end.upperBound...]
            } else {
                return rest.hasPrefix("<speak") || rest.hasPrefix("<!DOCTYPE")
            }
        }
    }
}

/// Why a document was refused; the message names what is wrong.
struct SSMLProblem: Error {
    let what: String
    /// Whether the place in the text helps (a syntax error) or not (a limit over the whole).
    var located = true

    func message(at location: (line: Int, column: Int)) -> String {
        located ? "SSML \(what) (line \(location.line), column \(location.column))" : "SSML \(what)"
    }
}

/// A strict reader of the XML that SSML documents use: elements, attributes, character data,
/// XML's five entities and character references, comments, CDATA and an XML declaration. No
/// DOCTYPE (it could declare entities) and no other processing instructions.
struct SSMLReader {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var depth = 0
    private var elements = 0
    private var breakSeconds = 0.0
    private(set) var marks: [String] = []

    init(_ text: String) {
        scalars = Array(text.unicodeScalars)
    }

    /// Line and column (1-based, in characters) of the reading position.
    var location: (line: Int, column: Int) {
        var line = 1, column = 1
        for scalar in scalars[..<min(index, scalars.count)] {
            if scalar == "\n" { line += 1; column = 1 } else { column += 1 }
        }
        return (line, column)
    }

    mutating func readDocument() throws(SSMLProblem) {
        skipWhitespace()
        if starts(with: "<?xml") { try readDeclaration() }
        try readMisc()
        guard starts(with: "<"), index + 1 < scalars.count, Self.isNameStart(scalars[index + 1]) else {
            throw SSMLProblem(what: "has no root element")
        }
        let root = try readElement()
        guard root == "speak" else { throw SSMLProblem(what: "has the root element <\(root)>, not <speak>", located: false) }
        try readMisc()
        guard index == scalars.count else {
            throw SSMLProblem(what: starts(with: "<") ? "has more than one root element" : "has text after its root element")
        }
    }

    // MARK: Structure

    /// One element and everything in it; returns its name.
    private mutating func readElement() throws(SSMLProblem) -> String {
        index += 1  // <
        let name = try readName("element name")
        guard name.utf8.count <= SSMLDocument.maximumNameBytes else {
            throw SSMLProblem(what: "has an element name longer than \(SSMLDocument.maximumNameBytes) bytes")
        }
        elements += 1
        depth += 1
        guard depth <= SSMLDocument.maximumDepth else {
            throw SSMLProblem(what: "nests deeper than \(SSMLDocument.maximumDepth)", located: false)
        }
        guard elements <= SSMLDocument.maximumElements else {
            throw SSMLProblem(what: "has more than \(SSMLDocument.maximumElements) elements", located: false)
        }
        // By name in lower case, as espeak-ng reads them; and which values had single quotes.
        var attributes: [String: String] = [:]
        var singleQuoted: Set<String> = []
        while true {
            let spaced = skipWhitespace()
            if starts(with: "/>") {
                index += 2
                try check(name, attributes, singleQuoted: singleQuoted)
                depth -= 1
                return name
            }
            if starts(with: ">") {
                index += 1
                break
            }
            guard spaced, index < scalars.count, Self.isNameStart(scalars[index]) else {
                throw SSMLProblem(what: "has a malformed tag <\(name)>")
            }
            let attribute = try readName("attribute name")
            guard attribute.utf8.count <= SSMLDocument.maximumNameBytes else {
                throw SSMLProblem(what: "has an attribute name longer than \(SSMLDocument.maximumNameBytes) bytes in <\(name)>")
            }
            guard attributes.count < SSMLDocument.maximumAttributes else {
                throw SSMLProblem(what: "has more than \(SSMLDocument.maximumAttributes) attributes in <\(name)>")
            }
            skipWhitespace()
            guard take("=") else { throw SSMLProblem(what: "attribute '\(attribute)' of <\(name)> has no value") }
            skipWhitespace()
            let start = index + 1
            if index < scalars.count, scalars[index] == "'" { singleQuoted.insert(attribute.lowercased()) }
            let value = try readAttributeValue()
            let raw = String(String.UnicodeScalarView(scalars[start..<(index - 1)]))
            if Self.holdsAnAttribute(raw) || Self.holdsAnAttribute(value) {
                throw SSMLProblem(what: "attribute '\(attribute)' of <\(name)> holds what reads as another attribute (a space, a name and '=')")
            }
            guard attributes.updateValue(value, forKey: attribute.lowercased()) == nil else {
                throw SSMLProblem(what: "repeats the attribute '\(attribute)' of <\(name)> (names are read without regard to case)")
            }
        }
        try check(name, attributes, singleQuoted: singleQuoted)
        try readContent(of: name)
        depth -= 1
        return name
    }

    /// Up to and including the end tag of `name`.
    private mutating func readContent(of name: String) throws(SSMLProblem) {
        while index < scalars.count {
            if starts(with: "</") {
                index += 2
                let closing = try readName("end tag")
                skipWhitespace()
                guard take(">") else { throw SSMLProblem(what: "has a malformed end tag </\(closing)>") }
                guard closing == name else { throw SSMLProblem(what: "closes <\(name)> with </\(closing)>") }
                return
            } else if starts(with: "<!--") {
                try readComment()
            } else if starts(with: "<![CDATA[") {
                try readCDATA()
            } else if starts(with: "<?") || starts(with: "<!") {
                throw SSMLProblem(what: "may hold no processing instruction or declaration inside <\(name)>")
            } else if starts(with: "<") {
                guard index + 1 < scalars.count, Self.isNameStart(scalars[index + 1]) else {
                    throw SSMLProblem(what: "has a '<' that starts no tag (write &lt;)")
                }
                _ = try readElement()
            } else if starts(with: "&") {
                _ = try readReference()
            } else if starts(with: "]]>") {
                throw SSMLProblem(what: "has ']]>' in its text (write ]]&gt;)")
            } else {
                try readCharacter()
            }
        }
        throw SSMLProblem(what: "ends before </\(name)>")
    }

    /// Comments and white space around the root; a DOCTYPE or processing instruction is refused.
    private mutating func readMisc() throws(SSMLProblem) {
        while true {
            skipWhitespace()
            if starts(with: "<!--") {
                try readComment()
            } else if starts(with: "<!DOCTYPE") {
                throw SSMLProblem(what: "may not have a DOCTYPE: entities are limited to XML's five")
            } else if starts(with: "<?") || starts(with: "<!") {
                throw SSMLProblem(what: "may hold no processing instruction or declaration but the XML declaration at its start")
            } else {
                return
            }
        }
    }

    private mutating func readDeclaration() throws(SSMLProblem) {
        index += 5
        guard index < scalars.count, Self.isWhitespace(scalars[index]) else {
            throw SSMLProblem(what: "has a malformed XML declaration")
        }
        while index < scalars.count, !starts(with: "?>") { try readCharacter() }
        guard take("?>") else { throw SSMLProblem(what: "has an XML declaration that does not end") }
    }

    private mutating func readComment() throws(SSMLProblem) {
        index += 4
        while index < scalars.count {
            if starts(with: "--") {
                guard starts(with: "-->") else { throw SSMLProblem(what: "has '--' inside a comment") }
                index += 3
                return
            }
            try readCharacter()
        }
        throw SSMLProblem(what: "has a comment that does not end")
    }

    private mutating func readCDATA() throws(SSMLProblem) {
        index += 9
        while index < scalars.count {
            if take("]]>") { return }
            try readCharacter()
        }
        throw SSMLProblem(what: "has a CDATA section that does not end")
    }

    // MARK: Pieces

    /// A name (element, attribute); `what` says which in the error.
    private mutating func readName(_ what: String) throws(SSMLProblem) -> String {
        guard index < scalars.count, Self.isNameStart(scalars[index]) else {
            throw SSMLProblem(what: "has a malformed \(what)")
        }
        let start = index
        index += 1
        while index < scalars.count, Self.isNameCharacter(scalars[index]) { index += 1 }
        return String(String.UnicodeScalarView(scalars[start..<index]))
    }

    /// A quoted value with its references resolved (line ends stay: a mark name's are refused by name).
    private mutating func readAttributeValue() throws(SSMLProblem) -> String {
        guard index < scalars.count, scalars[index] == "\"" || scalars[index] == "'" else {
            throw SSMLProblem(what: "has an attribute value without quotes")
        }
        let quote = scalars[index]
        index += 1
        var value = String.UnicodeScalarView()
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == quote {
                index += 1
                return String(value)
            } else if scalar == "<" {
                throw SSMLProblem(what: "has a '<' in an attribute value (write &lt;)")
            } else if scalar == "&" {
                value.append(try readReference())
            } else {
                try readCharacter()
                value.append(scalar)
            }
        }
        throw SSMLProblem(what: "has an attribute value that does not end")
    }

    /// `&lt;` `&gt;` `&amp;` `&quot;` `&apos;`, `&#N;`, `&#xH;`: the character it stands for.
    private mutating func readReference() throws(SSMLProblem) -> Unicode.Scalar {
        index += 1
        let start = index
        while index < scalars.count, scalars[index] != ";", index - start < 12 { index += 1 }
        let body = String(String.UnicodeScalarView(scalars[start..<min(index, scalars.count)]))
        guard take(";") else { throw SSMLProblem(what: "has a '&' that starts no reference (write &amp;)") }
        switch body {
        case "lt": return "<"
        case "gt": return ">"
        case "amp": return "&"
        case "quot": return "\""
        case "apos": return "'"
        default: break
        }
        guard body.hasPrefix("#") else {
            throw SSMLProblem(what: "uses the entity &\(body);: only XML's five (&lt; &gt; &amp; &quot; &apos;) and character references are allowed")
        }
        let hex = body.hasPrefix("#x")
        let digits = body.dropFirst(hex ? 2 : 1)
        guard !digits.isEmpty, let code = UInt32(digits, radix: hex ? 16 : 10), let scalar = Unicode.Scalar(code),
              Self.isCharacter(scalar) else {
            throw SSMLProblem(what: "has the character reference &\(body);, which is no XML character")
        }
        return scalar
    }

    /// One character of text; control characters other than tab and line ends are not XML.
    private mutating func readCharacter() throws(SSMLProblem) {
        guard Self.isCharacter(scalars[index]) else {
            throw SSMLProblem(what: "has the control character U+\(String(scalars[index].value, radix: 16, uppercase: true).leftPadded(4)), which XML does not allow")
        }
        index += 1
    }

    @discardableResult
    private mutating func skipWhitespace() -> Bool {
        let start = index
        while index < scalars.count, Self.isWhitespace(scalars[index]) { index += 1 }
        return index > start
    }

    private func starts(with prefix: String) -> Bool {
        var at = index
        for scalar in prefix.unicodeScalars {
            guard at < scalars.count, scalars[at] == scalar else { return false }
            at += 1
        }
        return true
    }

    private mutating func take(_ prefix: String) -> Bool {
        guard starts(with: prefix) else { return false }
        index += prefix.unicodeScalars.count
        return true
    }

    // MARK: What speech-dispatcher is given

    /// `element` as written; `attributes` by name in lower case.
    private mutating func check(_ element: String, _ attributes: [String: String], singleQuoted: Set<String>) throws(SSMLProblem) {
        // What espeak-ng reads it as: no regard to case; a namespace prefix (ssml:mark) too, to be safe.
        let kind = (element.split(separator: ":").last.map(String.init) ?? element).lowercased()
        if kind == "mark" {
            // The mark name's own bound (64 bytes) says more, so it comes first.
            if let name = attributes["name"] { try Self.checkMarkName(name) }
            if let other = attributes.keys.sorted().first(where: { $0 != "name" }) {
                throw SSMLProblem(what: "has a <\(element)> with the attribute '\(other)': a mark takes only a name")
            }
            if singleQuoted.contains("name") {
                throw SSMLProblem(what: "has a mark name in single quotes: give it in double quotes (espeak-ng reads it up to the next double quote)")
            }
        }
        if kind == "audio" || kind == "lexicon" {
            throw SSMLProblem(what: "may not hold <\(element)>: speech-dispatcher would open its file or URI itself")
        }
        for (attribute, value) in attributes.sorted(by: { $0.key < $1.key }) where value.utf8.count > SSMLDocument.maximumAttributeBytes {
            throw SSMLProblem(what: "attribute '\(attribute)' of <\(element)> is longer than \(SSMLDocument.maximumAttributeBytes) bytes")
        }
        switch kind {
        case "mark":
            guard let name = attributes["name"] else { throw SSMLProblem(what: "has a <mark> without a name") }
            marks.append(name)  // checked above
        case "break":
            // One without a time counts as a second (x-strong's length): 4,000 of them behind one
            // another held speech for everyone for minutes (red team).
            let time = attributes["time"] ?? "\(Int(SSMLDocument.untimedBreakSeconds))s"
            guard let seconds = Self.seconds(time) else {
                throw SSMLProblem(what: "has a break time '\(time)': give it as 500ms or 2s")
            }
            guard seconds <= SSMLDocument.maximumBreakSeconds else {
                throw SSMLProblem(what: "has a break of \(time), longer than \(Int(SSMLDocument.maximumBreakSeconds)) s")
            }
            breakSeconds += seconds
            guard breakSeconds <= SSMLDocument.maximumTotalBreakSeconds else {
                throw SSMLProblem(what: "has breaks adding up to more than \(Int(SSMLDocument.maximumTotalBreakSeconds)) s", located: false)
            }
        default:
            break
        }
    }

    /// A mark name comes back from the output module as a line of its own: an XML name (no spaces,
    /// controls or line breaks), short, and not one of speech-dispatcher's own (`__spd_…`).
    static func checkMarkName(_ name: String) throws(SSMLProblem) {
        if name.isEmpty { throw SSMLProblem(what: "has a <mark> with an empty name") }
        if name.unicodeScalars.contains(where: { $0 == "\n" || $0 == "\r" || $0 == "\u{85}" || $0 == "\u{2028}" || $0 == "\u{2029}" }) {
            throw SSMLProblem(what: "mark name contains a line break")
        }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            throw SSMLProblem(what: "mark name contains a control character")
        }
        if name.utf8.count > SSMLDocument.maximumMarkNameBytes {
            throw SSMLProblem(what: "mark name is longer than \(SSMLDocument.maximumMarkNameBytes) bytes")
        }
        let scalars = Array(name.unicodeScalars)
        guard isNameStart(scalars[0]), scalars[0] != ":", scalars.allSatisfy({ isNameCharacter($0) && $0 != ":" }) else {
            throw SSMLProblem(what: "mark name '\(name)' is not an XML name (letters, digits, '_', '-', '.'; no spaces)")
        }
        if name.lowercased().hasPrefix("__spd_") {
            throw SSMLProblem(what: "mark name '\(name)' starts with __spd_, which speech-dispatcher keeps for its own marks")
        }
    }

    /// Whether an attribute value holds white space, a name and `=`: espeak-ng, looking for an
    /// attribute, would take it for one (`<break x=" time='100s'" time="1s"/>` is a 100 s break).
    static func holdsAnAttribute(_ value: String) -> Bool {
        let scalars = Array(value.unicodeScalars)
        var index = 0
        while index < scalars.count {
            guard scalars[index].properties.isWhitespace else { index += 1; continue }
            index += 1
            let start = index
            while index < scalars.count, isNameCharacter(scalars[index]) { index += 1 }
            guard index > start else { continue }
            while index < scalars.count, scalars[index].properties.isWhitespace { index += 1 }
            if index < scalars.count, scalars[index] == "=" { return true }
        }
        return false
    }

    /// SSML's time designation: a non-negative number and `s` or `ms`.
    static func seconds(_ text: String) -> Double? {
        let trimmed = String(text.drop(while: \.isWhitespace).reversed().drop(while: \.isWhitespace).reversed())
        let (number, scale) = trimmed.hasSuffix("ms") ? (trimmed.dropLast(2), 0.001)
            : trimmed.hasSuffix("s") ? (trimmed.dropLast(1), 1.0) : (Substring(""), 0)
        guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
              let value = Double(number), value.isFinite else { return nil }
        return value * scale
    }

    // MARK: XML's character classes (XML 1.0, fifth edition)

    static func isWhitespace(_ scalar: Unicode.Scalar) -> Bool {
        scalar == " " || scalar == "\t" || scalar == "\n" || scalar == "\r"
    }

    static func isCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x9, 0xA, 0xD, 0x20...0xD7FF, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
        default: false
        }
    }

    static func isNameStart(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x3A, 0x41...0x5A, 0x5F, 0x61...0x7A, 0xC0...0xD6, 0xD8...0xF6, 0xF8...0x2FF, 0x370...0x37D,
             0x37F...0x1FFF, 0x200C...0x200D, 0x2070...0x218F, 0x2C00...0x2FEF, 0x3001...0xD7FF,
             0xF900...0xFDCF, 0xFDF0...0xFFFD, 0x10000...0xEFFFF: true
        default: false
        }
    }

    static func isNameCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x2D, 0x2E, 0x30...0x39, 0xB7, 0x300...0x36F, 0x203F...0x2040: true
        default: isNameStart(scalar)
        }
    }
}

private extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
