import Foundation

/// The errors an interface's calls can end with, as its XML lists them in a comment:
///
///     Errors (org.voicebox.Error.*):
///       Name       what it means, on as many
///                  further lines as it takes
///
/// (names indented 4 spaces and followed by two or more, further lines indented deeper). The list
/// ends at the first line that is neither.
struct ErrorList {
    struct Entry {
        var name: String
        var meaning: [String]
    }

    /// "org.voicebox.Error".
    var prefix: String
    var entries: [Entry]

    /// nil when no comment has such a list.
    init?(comments: [String]) throws {
        let marker = "Errors ("
        guard let comment = comments.first(where: { $0.contains(marker) }) else { return nil }
        var lines = comment.split(separator: "\n", omittingEmptySubsequences: false)[...]
        while let line = lines.first, !line.contains(marker) { lines.removeFirst() }
        let heading = lines.removeFirst()
        guard let match = heading.firstMatch(of: /Errors \(([A-Za-z0-9_.]+)\.\*\):/) else {
            throw GeneratorError("the errors' heading must read \"Errors (PREFIX.*):\", not \"\(heading)\"")
        }
        prefix = String(match.1)
        entries = []
        for line in lines {
            if let entry = line.wholeMatch(of: #/ {4}([A-Z][A-Za-z0-9]*) {2,}(\S.*)/#) {
                entries.append(Entry(name: String(entry.1), meaning: [String(entry.2)]))
            } else if !entries.isEmpty, line.prefix(while: { $0 == " " }).count > 4 {
                entries[entries.count - 1].meaning.append(line.trimmingCharacters(in: .whitespaces))
            } else {
                break
            }
        }
        guard !entries.isEmpty else { throw GeneratorError("the list of errors under \"\(heading)\" is empty") }
    }
}
