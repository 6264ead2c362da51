import Foundation
import Glibc
import XCTest

/// Audio as the tests compare it: 16-bit samples and their rate, from a WAV file or a raw stream,
/// and espeak-ng's own rendering of a text to hold them against.
struct SpeechAudio {
    var rate: Int
    var samples: [Int16]

    var seconds: Double { Double(samples.count) / Double(rate) }

    var rms: Double {
        guard !samples.isEmpty else { return 0 }
        return (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
    }

    /// A WAV file's header fields and samples; the sizes as the header states them.
    struct WAV {
        var riffSize: UInt32
        var dataSize: UInt32
        var channels: Int
        var bits: Int
        var audio: SpeechAudio
    }

    static func wav(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> WAV {
        func u32(_ at: Int) -> UInt32 { UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24 }
        func u16(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        guard bytes.count >= 44, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<16].elementsEqual("WAVEfmt ".utf8),
              bytes[36..<40].elementsEqual("data".utf8), u16(20) == 1 else {
            struct NotWAV: Error {}
            XCTFail("not a 44-byte-header PCM WAV: \(bytes.prefix(44))", file: file, line: line)
            throw NotWAV()
        }
        return WAV(riffSize: u32(4), dataSize: u32(40), channels: u16(22), bits: u16(34),
                   audio: SpeechAudio(rate: Int(u32(24)), samples: samples(bytes[44...])))
    }

    static func samples(_ bytes: ArraySlice<UInt8>) -> [Int16] {
        stride(from: bytes.startIndex, to: bytes.endIndex - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
    }

    /// What `espeak-ng -m -v VOICE -w` renders of `text` wrapped in <speak> (or as it is, when it
    /// is SSML already): speech-dispatcher's module renders with espeak-ng's SSML reader.
    static func espeak(_ text: String, voice: String = "en", ssml: Bool = false) throws -> SpeechAudio {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-espeak-\(UUID().uuidString).wav").path
        defer { unlink(path) }
        let document = ssml ? text : "<speak>" + text.replacingOccurrences(of: "&", with: "&amp;")
            .replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;") + "</speak>"
        let result = try runProgram(["/usr/bin/espeak-ng", "-m", "-v", voice, "-w", path, document], seconds: 60)
        XCTAssertEqual(result.status, 0, "espeak-ng failed")
        return try wav(Array(try Data(contentsOf: URL(fileURLWithPath: path)))).audio
    }

    /// How alike two renderings are: the normalized cross-correlation of their sample envelopes
    /// (10 ms RMS windows) at the best shift within 50 ms, 1 for the same audio.
    func likeness(to other: SpeechAudio) -> Double {
        let a = envelope(), b = other.envelope()
        var best = -1.0
        for shift in -5...5 {
            var dot = 0.0, normA = 0.0, normB = 0.0
            for index in 0..<min(a.count, b.count) {
                let j = index + shift
                guard j >= 0, j < b.count else { continue }
                dot += a[index] * b[j]
                normA += a[index] * a[index]
                normB += b[j] * b[j]
            }
            if normA > 0, normB > 0 { best = max(best, dot / (normA * normB).squareRoot()) }
        }
        return best
    }

    /// The median fundamental frequency (Hz) of the voiced 40 ms frames: the lag between 2.5 and
    /// 15 ms (400-67 Hz) where each frame is most like itself.
    func medianPitch() -> Double {
        let frame = rate / 25, shortest = rate / 400, longest = rate / 67
        var pitches: [Double] = []
        for start in stride(from: 0, to: samples.count - frame - longest, by: frame) {
            let x = samples[start..<(start + frame + longest)].map(Double.init)
            let energy = x[0..<frame].reduce(0) { $0 + $1 * $1 }
            guard (energy / Double(frame)).squareRoot() > 1000 else { continue }
            var best = 0.0, bestLag = 0
            for lag in shortest...longest {
                var dot = 0.0, other = 0.0
                for index in 0..<frame {
                    dot += x[index] * x[index + lag]
                    other += x[index + lag] * x[index + lag]
                }
                let score = dot / (energy * other).squareRoot()
                if score > best { (best, bestLag) = (score, lag) }
            }
            if best > 0.7 { pitches.append(Double(rate) / Double(bestLag)) }
        }
        return pitches.sorted().dropFirst(pitches.count / 2).first ?? 0
    }

    /// RMS of each 10 ms window.
    func envelope() -> [Double] {
        let window = max(1, rate / 100)
        return stride(from: 0, to: samples.count - window + 1, by: window).map { start in
            (samples[start..<(start + window)].reduce(0.0) { $0 + Double($1) * Double($1) } / Double(window)).squareRoot()
        }
    }

    /// The assertions every comparison with espeak-ng makes: same rate, length within 2 %, energy
    /// within 10 %, envelopes alike (≥ 0.95).
    func assertMatches(_ reference: SpeechAudio, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(rate, reference.rate, "\(what): sample rate", file: file, line: line)
        XCTAssertEqual(seconds, reference.seconds, accuracy: reference.seconds * 0.02 + 0.01,
                       "\(what): \(seconds) s against espeak-ng's \(reference.seconds) s", file: file, line: line)
        XCTAssertEqual(rms, reference.rms, accuracy: reference.rms * 0.1, "\(what): loudness", file: file, line: line)
        let likeness = likeness(to: reference)
        XCTAssertGreaterThan(likeness, 0.95, "\(what): the envelopes differ (likeness \(likeness))", file: file, line: line)
        XCTAssertGreaterThan(reference.seconds, 0.3, "\(what): espeak-ng rendered next to nothing", file: file, line: line)
    }
}
