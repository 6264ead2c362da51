/// Encoding what we send: command words and the body of SPEAK. Every text that reaches
/// speech-dispatcher, plain or SSML, goes through `speakData`.
enum SSIPText {
    /// The body after `SPEAK`'s 230, as SSIP wants it: CRLF line ends, a line starting with `.` gets a
    /// second one, and the end marker `\r\n.\r\n` (as speech-dispatcher's own clients send it).
    ///
    /// What speech-dispatcher takes as the message (after undoing the dot escape) is exactly
    /// `content(of: text)`: `\r\n`, `\r` and `\n` all become `\r\n`, and control characters other than
    /// tab become spaces. speech-dispatcher 0.11.4 passes them on to the output module, where no
    /// synthesizer has a use for them (none of C0, DEL or C1 froze it or changed what else was
    /// said, measured with espeak-ng); turning them into spaces keeps word boundaries. NUL cannot
    /// arrive over D-Bus, and would end the message inside speech-dispatcher.
    static func speakData(_ text: String) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 8)
        var lineStart = true
        var afterCR = false
        for scalar in text.unicodeScalars {
            if scalar == "\n" && afterCR {  // the second half of a CRLF already written
                afterCR = false
                continue
            }
            afterCR = scalar == "\r"
            if scalar == "\r" || scalar == "\n" {
                out += [13, 10]
                lineStart = true
                continue
            }
            if lineStart && scalar == "." { out.append(UInt8(ascii: ".")) }
            lineStart = false
            if isControl(scalar) {
                out.append(UInt8(ascii: " "))
            } else {
                Unicode.UTF8.encode(scalar) { out.append($0) }  // no String per scalar (a 60 KB text is 60,000 scalars)
            }
        }
        if !lineStart || out.isEmpty { out += [13, 10] }
        out += [UInt8(ascii: "."), 13, 10]
        return out
    }

    /// The message speech-dispatcher gets for `text`: its lines joined by CRLF, controls as spaces;
    /// a final line end is the message's own (SSIP's end marker begins with one).
    static func content(of text: String) -> String {
        var normalized = String.UnicodeScalarView()
        var afterCR = false
        for scalar in text.unicodeScalars {
            if scalar == "\n" && afterCR { afterCR = false; continue }
            afterCR = scalar == "\r"
            if scalar == "\r" || scalar == "\n" {
                normalized.append(contentsOf: "\r\n".unicodeScalars)
            } else {
                normalized.append(isControl(scalar) ? " " : scalar)
            }
        }
        var result = String(normalized)
        if result.hasSuffix("\r\n") { result.removeLast() }  // "\r\n" is one Character
        return result
    }

    /// C0 (but tab and the line ends, handled before), DEL and C1.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09: false
        case 0x00...0x1F, 0x7F...0x9F: true
        default: false
        }
    }

    /// A command line: an argument may not contain a line end (it would be a second command).
    static func command(_ words: String...) -> [UInt8] {
        let line = words.joined(separator: " ").map { $0.isNewline ? " " : $0 }
        return Array((String(line) + "\r\n").utf8)
    }

    /// The command word and, for SET/GET/LIST, what it sets or lists: never a value a caller chose.
    static func commandName(_ line: [UInt8]) -> String {
        let words = String(decoding: line.prefix(64), as: UTF8.self)
            .split(whereSeparator: \.isWhitespace)  // "\r\n" is one Character
        guard let first = words.first else { return "a command" }
        switch first.uppercased() {
        case "SET": return words.prefix(3).joined(separator: " ")
        case "GET", "LIST": return words.prefix(2).joined(separator: " ")
        default: return String(first)
        }
    }
}
