/// Whether a field's report of the text around its cursor (IBus's SetSurroundingText) shows text
/// we committed: the only evidence IBus gives that the text reached an application's field. The
/// engine's FocusIn does not: gnome-shell's own search entry counts, and with nothing focused the
/// daemon focuses a context of its own ("fake") that shows nothing anywhere.
enum SurroundingText {
    /// Fewer characters than this before the cursor prove nothing about a longer text (a field may
    /// report only its current line, or a window of it).
    static let minimumEvidence = 8

    /// True when the text before the report's cursor ends with `committed`, or (a field that cut
    /// its report to a window) is at least `minimumEvidence` characters and `committed` ends with
    /// all of it, or (a field that reports its current line only) is all of that line and the line
    /// is what `committed` put after its last line break. The cursor
    /// is counted in characters as IBus specifies, or in UTF-8 bytes as gnome-shell 43 passes on
    /// the Wayland text-input protocol's offsets: either reading may confirm.
    /// `strictly`: all of `committed` must be shown (a short composition proves nothing by a tail).
    static func confirms(_ report: EngineReport.Surrounding, committed: String, strictly: Bool = false) -> Bool {
        let expected = Array(committed.unicodeScalars)
        guard !expected.isEmpty else { return true }
        // A text view reports only the line its cursor is on: after a line break we sent, that line
        // from its start must be what followed our last break.
        // (An empty last line, after a break we sent, only where the whole reported line is empty:
        // a one-line field's cursor at its start shows nothing of ours.)
        let lastLine = expected.lastIndex(of: "\n").map { expected[($0 + 1)...] }
        let reportsOneLine = !report.text.unicodeScalars.contains("\n")
        // A report shorter than what was sent shows a part of it only where the field cut its
        // report to a window (text-input-v3 bounds it at 4,000 bytes); a short report that merely
        // ends like our text is a field that refused the rest (a length limit).
        let windowed = report.text.utf8.count >= windowedReportBytes
        return beforeCursor(report).contains { before in
            if before.count >= expected.count { return before.suffix(expected.count).elementsEqual(expected) }
            if !strictly, reportsOneLine, let lastLine, before.elementsEqual(lastLine), !lastLine.isEmpty || report.text.isEmpty {
                return true
            }
            return !strictly && windowed && before.count >= min(expected.count, minimumEvidence)
                && expected.suffix(before.count).elementsEqual(before)
        }
    }

    /// The least a report cut to a window holds (UTF-8 bytes).
    static let windowedReportBytes = 3_000

    /// The text before the cursor under each reading of the cursor that lands inside the text.
    static func beforeCursor(_ report: EngineReport.Surrounding) -> [[Unicode.Scalar]] {
        var readings: [[Unicode.Scalar]] = []
        let scalars = Array(report.text.unicodeScalars)
        let cursor = Int(report.cursor)
        if cursor <= scalars.count { readings.append(Array(scalars[..<cursor])) }
        let bytes = Array(report.text.utf8)
        // A byte offset must fall between two characters (not on a continuation byte).
        if cursor <= bytes.count, cursor == bytes.count || bytes[cursor] & 0xC0 != 0x80 {
            let prefix = Array(String(decoding: bytes[..<cursor], as: UTF8.self).unicodeScalars)
            if readings.first != prefix { readings.append(prefix) }
        }
        return readings
    }
}
