/// The rules that keep a document within what speech-dispatcher and espeak-ng survive (see
/// `SSMLDocument`), and XML's character classes.
extension SSMLReader {
    /// `element` as written; `attributes` by name in lower case.
    mutating func check(_ element: String, _ attributes: [String: String], singleQuoted: Set<String>) throws(SSMLProblem) {
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
