import Foundation

/// pocketsphinx-testdata's recordings (real speech with transcripts), for every test target.
public enum Recordings {
    public static let directory = "/usr/share/pocketsphinx/test/data"
    public static func path(_ name: String) -> String { directory + "/" + name }

    /// A recording's bytes as they are in the file (raw recordings are 16 kHz mono s16le).
    public static func bytes(_ name: String = "goforward.raw") throws -> [UInt8] {
        try Array(Data(contentsOf: URL(fileURLWithPath: path(name))))
    }

    public static func cardsGrammar() throws -> String {
        try String(contentsOfFile: path("cards/cards.gram"), encoding: .utf8)
    }

    /// cards.transcription: "<s> ten of clubs  </s> (001)" → ["001": "ten of clubs"].
    public static func cardsTranscription() throws -> [String: String] {
        try transcription("cards/cards.transcription")
    }

    /// A transcription file of the test data, "<s> words </s> (id)" per line: words by id.
    public static func transcription(_ name: String) throws -> [String: String] {
        let text = try String(contentsOfFile: path(name), encoding: .utf8)
        var result: [String: String] = [:]
        for line in text.split(separator: "\n") {
            let words = line.split(separator: " ").map(String.init)
            guard let id = words.last, id.hasPrefix("(") else { continue }
            let said = words.dropLast().filter { $0 != "<s>" && $0 != "</s>" }
            result[String(id.dropFirst().dropLast())] = said.joined(separator: " ")
        }
        return result
    }

    /// A 16-bit PCM WAV file of silence whose header says any rate and channel count, including
    /// ones no converter takes.
    public static func silentWAV(rate: Int, channels: Int, frames: Int) -> Data {
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let bytes = frames * channels * 2
        data.append(contentsOf: Array("RIFF".utf8))
        append(UInt32(36 + bytes))
        data.append(contentsOf: Array("WAVEfmt ".utf8))
        append(UInt32(16))
        append(UInt16(1))  // PCM
        append(UInt16(channels))
        append(UInt32(rate))
        append(UInt32(rate * channels * 2))
        append(UInt16(channels * 2))
        append(UInt16(16))
        data.append(contentsOf: Array("data".utf8))
        append(UInt32(bytes))
        data.append(Data(count: bytes))
        return data
    }
}
