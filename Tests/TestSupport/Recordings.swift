import Foundation

/// pocketsphinx-testdata's recordings (real speech with transcripts), for every test target.
public enum Recordings {
    public static let directory = "/usr/share/pocketsphinx/test/data"
    public static func path(_ name: String) -> String { directory + "/" + name }

    public static func cardsGrammar() throws -> String {
        try String(contentsOfFile: path("cards/cards.gram"), encoding: .utf8)
    }

    /// cards.transcription: "<s> ten of clubs  </s> (001)" → ["001": "ten of clubs"].
    public static func cardsTranscription() throws -> [String: String] {
        let text = try String(contentsOfFile: path("cards/cards.transcription"), encoding: .utf8)
        var result: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            guard let id = words.last, id.hasPrefix("(") else { continue }
            let said = words.dropLast().filter { $0 != "<s>" && $0 != "</s>" }
            result[String(id.dropFirst().dropLast())] = said.joined(separator: " ")
        }
        return result
    }
}
