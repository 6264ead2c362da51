/// Encoding what we send: command words and the body of SPEAK.
enum SSIPText {
    /// The body after `SPEAK`'s 230: CRLF line ends, a line starting with `.` gets a second one, and the
    /// end marker `\r\n.\r\n` (SSIP, as speech-dispatcher's own clients send it).
    static func speakData(_ text: String) -> [UInt8] {
        let normalized = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        var lines = normalized.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix(".") ? "." + line : String(line)
        }
        if lines.last == "" && lines.count > 1 { lines.removeLast() }
        return Array((lines.joined(separator: "\r\n") + "\r\n.\r\n").utf8)
    }

    /// A command line: an argument may not contain a line end (it would be a second command).
    static func command(_ words: String...) -> [UInt8] {
        let line = words.joined(separator: " ").map { $0.isNewline ? " " : $0 }
        return Array((String(line) + "\r\n").utf8)
    }
}
