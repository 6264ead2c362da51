import Foundation
@testable import VoiceboxPocketsphinx
import VoiceboxCore

/// A stream that yields its decoder inside speech (another caller's stream waited too long)
/// hears the cut utterance again from its start with the next decoder. `CutInsideSpeech.run`
/// cuts goforward at every chunk from the fourth on (FileReading's chunks, 2048 samples): what
/// the two decoders heard, with the replay, and without it at every third cut (to show that a
/// fresh decoder starting inside speech takes it for the background noise and loses words).
/// UnitTests run it with a grammar of the four words (a twelfth of the decoding); SpeedTests with
/// the language model, as dictation hears it.
enum CutInsideSpeech {
    struct Outcome {
        /// With the replay: the cut's chunk and the words, for every cut.
        var replayed: [(cutAt: Int, text: String)] = []
        /// Without: the words, at every third cut.
        var unreplayed: [String] = []
    }

    /// Every word of goforward, in any order: the search a twelfth of the language model's, the
    /// detector and the cepstral mean (what loses words) the same.
    static let fourWords = "#JSGF V1.0; grammar g; public <s> = (go | forward | ten | meters)*;"

    static func run(grammar: String?) async throws -> Outcome {
        let bytes = try Array(Data(contentsOf: URL(fileURLWithPath: Recordings.path("goforward.raw"))))
        let samples = stride(from: 0, to: bytes.count - 1, by: 2).map { Int16(bitPattern: UInt16(bytes[$0]) | UInt16(bytes[$0 + 1]) << 8) }
        let chunks = samples.count / FileReading.chunk
        var outcome = Outcome()
        for cutAt in 4..<chunks {
            for replay in cutAt % 3 == 0 ? [FileReading.maxSegmentSeconds, 0] : [FileReading.maxSegmentSeconds] {
                var asked = 0
                let first = try await TestData.engine.makeDecoder(.init(grammar: grammar))
                let cut = try await FileReading.read(SampleFile(samples[...]), through: first, yieldInSpeech: {
                    asked += 1
                    return asked == cutAt
                }, replaySeconds: replay)
                let second = try await TestData.engine.makeDecoder(.init(grammar: grammar))
                let taken = Int((cut.seconds * 16_000).rounded())
                let replayed = cut.unfinished?.audio ?? []
                let after = replayed + samples[(taken + replayed.count)...]
                let end = try await FileReading.read(SampleFile(after[...]), through: second)
                let text = RecognitionResult(joining: cut.segments + end.segments).text
                if replay > 0 {
                    outcome.replayed.append((cutAt, text))
                } else {
                    outcome.unreplayed.append(text)
                }
            }
        }
        return outcome
    }
}

/// Samples in memory as a file, read from the front.
final class SampleFile: AudioFile {
    private var samples: ArraySlice<Int16>
    init(_ samples: ArraySlice<Int16>) { self.samples = samples }
    var duration: Double? { nil }
    func read(maxSamples: Int) throws -> [Int16] {
        let chunk = samples.prefix(maxSamples)
        samples = samples.dropFirst(chunk.count)
        return Array(chunk)
    }
}
