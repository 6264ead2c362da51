/// A strict reader of the XML that SSML documents use: elements, attributes, character data,
/// XML's five entities and character references, comments, CDATA and an XML declaration. No
/// DOCTYPE (it could declare entities) and no other processing instructions.
struct SSMLReader {
    private let scalars: [Unicode.Scalar]
    private var index = 0
    private var depth = 0
    private var elements = 0
    /// Kept by the rules (SSMLReader+Rules.swift) as elements are read.
    var breakSeconds = 0.0
    var marks: [String] = []

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
}

private extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
