import XCTest
@testable import VoiceboxWorkers

/// What an output module writes, read as its protocol says, and what breaks it.
final class ModuleOutputTests: XCTestCase {
    private func feed(_ text: [UInt8], in pieces: Int = 1) throws -> [ModuleOutput.Item] {
        var output = ModuleOutput()
        var items: [ModuleOutput.Item] = []
        let size = max(1, text.count / pieces)
        for start in stride(from: 0, to: text.count, by: size) {
            items += try output.feed(text[start..<min(text.count, start + size)])
        }
        return items
    }

    private func audioBlock(_ samples: [UInt8], bigEndian: Bool = false, count: Int? = nil, bits: Int = 16) -> [UInt8] {
        var escaped: [UInt8] = []
        for byte in samples {
            if byte == 10 || byte == 0x7D { escaped += [0x7D, byte ^ 0x20] } else { escaped.append(byte) }
        }
        return Array("705-bits=\(bits)\n705-num_channels=1\n705-sample_rate=22050\n705-num_samples=\(count ?? samples.count / 2)\n705-big_endian=\(bigEndian ? 1 : 0)\n705-AUDIO".utf8)
            + [0] + escaped + Array("\n705 AUDIO\n".utf8)
    }

    func testRepliesEventsMarksAndAudioInOrderWhateverTheReadsCut() throws {
        let samples: [UInt8] = [10, 0x7D, 0x2A, 0x5D, 1, 2]  // LF and the escape itself among them
        let text = Array("299-Espeak-ng: Initialized successfully.\n299 OK LOADED SUCCESSFULLY\n701 BEGIN\n".utf8)
            + audioBlock(samples) + Array("700-vb3\n700 INDEX MARK\n702 END\n".utf8)
        let expected: [ModuleOutput.Item] = [.reply(code: 299, lines: ["Espeak-ng: Initialized successfully."]), .event(701),
                                             .audio(sampleRate: 22050, channels: 1, samples: samples), .mark("vb3"), .event(702)]
        for pieces in [1, 3, 7, text.count] {
            XCTAssertEqual(try feed(text, in: pieces), expected, "in \(pieces) reads")
        }
    }

    func testBigEndianSamplesComeLittleEndian() throws {
        XCTAssertEqual(try feed(audioBlock([1, 2, 3, 4], bigEndian: true)), [.audio(sampleRate: 22050, channels: 1, samples: [2, 1, 4, 3])])
    }

    func testWhatTheProtocolDoesNotAllowIsAViolation() {
        let bad: [[UInt8]] = [
            Array("hello\n".utf8),                                  // no code
            Array("70x BEGIN\n".utf8),
            Array("999 NOPE\n".utf8),                               // no such code
            Array("700-a\n701 BEGIN\n".utf8),                       // another code inside a block
            Array("700-a\n700-b\n700 INDEX MARK\n".utf8),           // two names for one mark
            audioBlock([1, 2, 3, 4], count: 3),                     // a count that is not what came
            audioBlock([1, 2], bits: 8),
            Array(repeating: UInt8(ascii: "7"), count: ModuleOutput.maximumLine + 1),  // no line end within 1 MiB
        ]
        for text in bad {
            XCTAssertThrowsError(try feed(text), "\(String(decoding: text.prefix(40), as: UTF8.self))")
        }
    }
}
