import Foundation
@testable import TestSupport
import XCTest
@testable import VoiceboxPocketsphinx
import VoiceboxSndfile
import VoiceboxCore

final class AudioFileReaderTests: XCTestCase {
    private func readAll(_ reader: AudioFileReader, chunk: Int = 4096) throws -> [Int16] {
        var samples: [Int16] = []
        while case let next = try reader.read(maxSamples: chunk), !next.isEmpty {
            XCTAssertLessThanOrEqual(next.count, chunk + 256)
            samples += next
        }
        return samples
    }

    func testRawFilesAreSixteenKilohertzMonoLittleEndian() throws {
        try TestData.requireModel()
        let path = Recordings.path("goforward.raw")
        let reader = try AudioFileReader(path: path)
        XCTAssertEqual(reader.sourceSampleRate, 16_000)
        XCTAssertEqual(reader.channels, 1)
        XCTAssertEqual(try XCTUnwrap(reader.duration), 2.78625, accuracy: 1e-9)
        let samples = try readAll(reader, chunk: 1000)
        // Bit for bit what is in the file.
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        let expected = bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }.map { Int16(littleEndian: $0) }
        XCTAssertEqual(samples, expected)
        XCTAssertEqual(reader.position, 2.78625, accuracy: 1e-9)
        XCTAssertEqual(try reader.read(), [], "stays at the end")
    }

    func testWavHeaderIsReadNotDecoded() throws {
        try TestData.requireModel()
        let reader = try AudioFileReader(path: Recordings.path("cards/001.wav"))
        XCTAssertEqual(reader.sourceSampleRate, 16_000)
        XCTAssertEqual(try readAll(reader).count, 17526)
    }

    func testResamplesAndMixesDown() throws {
        try TestData.requireModel()
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/sox"), "sox is not installed")
        let directory = try makeTemporaryDirectory(self)
        let path = directory.appendingPathComponent("stereo.wav").path
        XCTAssertNotNil(programOutput("/usr/bin/sox", ["-t", "raw", "-r", "16000", "-e", "signed", "-b", "16", "-c", "1",
                                                    Recordings.path("goforward.raw"), path, "rate", "44100", "channels", "2"]))
        let reader = try AudioFileReader(path: path)
        XCTAssertEqual(reader.sourceSampleRate, 44_100)
        XCTAssertEqual(reader.channels, 2)
        XCTAssertEqual(try XCTUnwrap(reader.duration), 2.78625, accuracy: 0.001)
        let samples = try readAll(reader)
        XCTAssertEqual(samples.count, 44580, accuracy: 2)
        // The same waveform: compare loudness with the 16 kHz original.
        let original = try readAll(AudioFileReader(path: Recordings.path("goforward.raw")))
        XCTAssertEqual(rms(samples), rms(original), accuracy: rms(original) * 0.02)
    }

    /// An hour streams through in bounded memory: a generated 60-minute tone (16 kHz 8-bit, 58 MB
    /// on disk, 115 MB as samples) never shows up in the resident size. (At 8 kHz the same test
    /// spends 11 s in libsamplerate; resampled files stream through the same chunks.)
    func testLongFilesStream() throws {
        let directory = try makeTemporaryDirectory(self)
        let path = directory.appendingPathComponent("hour.wav").path
        try writeTone(path, seconds: 3600, rate: 16_000)
        let reader = try AudioFileReader(path: path)
        XCTAssertEqual(try XCTUnwrap(reader.duration), 3600, accuracy: 1e-6)
        let before = residentBytes()
        var total = 0
        while case let chunk = try reader.read(maxSamples: 16_000), !chunk.isEmpty { total += chunk.count }
        XCTAssertEqual(Double(total), 3600 * 16_000, accuracy: 16)
        // AddressSanitizer keeps freed memory in quarantine, so the figure means nothing there.
        let addressSanitizer = dlsym(nil, "__asan_init") != nil
        if !addressSanitizer {
            XCTAssertLessThan(residentBytes() - before, 20_000_000, "the hour was not held in memory")
        }
    }

    /// A WAV of 8-bit unsigned mono PCM holding a quiet 500 Hz tone, written a block at a time.
    private func writeTone(_ path: String, seconds: Int, rate: Int) throws {
        let count = seconds * rate
        var header = Data("RIFF".utf8)
        func append(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { header.append(contentsOf: $0) } }
        func append(_ value: UInt16) { withUnsafeBytes(of: value.littleEndian) { header.append(contentsOf: $0) } }
        append(UInt32(36 + count))
        header.append(contentsOf: Data("WAVEfmt ".utf8))
        append(UInt32(16)); append(UInt16(1)); append(UInt16(1))  // PCM, mono
        append(UInt32(rate)); append(UInt32(rate)); append(UInt16(1)); append(UInt16(8))
        header.append(contentsOf: Data("data".utf8))
        append(UInt32(count))
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: header))
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seekToEnd()
        let period = rate / 500
        let block = Data((0..<(rate * 60)).map { UInt8(128 + 12 * sin(2 * Double.pi * Double($0 % period) / Double(period))) })
        for _ in 0..<(seconds / 60) { try handle.write(contentsOf: block) }
    }

    func testUnreadableFiles() throws {
        let directory = try makeTemporaryDirectory(self)
        let text = directory.appendingPathComponent("notes.wav")
        try "not audio at all\n".write(to: text, atomically: true, encoding: .utf8)
        let empty = directory.appendingPathComponent("empty.flac")
        XCTAssertTrue(FileManager.default.createFile(atPath: empty.path, contents: Data()))
        let fifo = directory.appendingPathComponent("pipe.wav").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)

        let cases: [(String, String)] = [
            (directory.appendingPathComponent("missing.wav").path, "No such file"),
            (directory.path, "is a directory"),
            (fifo, "is a FIFO"),  // would block forever if it were opened
            ("/dev/zero", "is a character device"),
            (text.path, "not audio"),
            (empty.path, "empty"),
        ]
        for (path, reason) in cases {
            XCTAssertThrowsError(try AudioFileReader(path: path), path) { error in
                guard case RecognitionError.unreadableAudio(let message) = error else {
                    return XCTFail("\(path): \(error)")
                }
                XCTAssertTrue(message.hasPrefix(path), message)
                XCTAssertTrue(message.contains(reason), message)
            }
        }
    }

    /// A header whose rate or channels cannot be converted is an unreadable file that says why,
    /// never an engine failure (which would tell callers that recognition as a whole is broken).
    func testRatesAndChannelsOutsideTheRangeAreUnreadableAndSaySo() throws {
        let directory = try makeTemporaryDirectory(self)
        let cases: [(rate: Int, channels: Int, reason: String?)] = [
            (1, 1, "sample rate 1 Hz is outside 8,000–192,000 Hz"),
            (7_999, 1, "sample rate 7,999 Hz is outside 8,000–192,000 Hz"),
            (192_001, 2, "sample rate 192,001 Hz is outside 8,000–192,000 Hz"),
            (16_000, 65, "65 channels; at most 64 are mixed down"),
            (8_000, 1, nil),
            (192_000, 64, nil),
        ]
        for (rate, channels, reason) in cases {
            let path = directory.appendingPathComponent("r\(rate)-c\(channels).wav").path
            try Recordings.silentWAV(rate: rate, channels: channels, frames: 4_000).write(to: URL(fileURLWithPath: path))
            guard let reason else {
                let reader = try AudioFileReader(path: path)
                XCTAssertEqual(reader.sourceSampleRate, rate)
                XCTAssertFalse(try readAll(reader).isEmpty, path)
                continue
            }
            XCTAssertThrowsError(try AudioFileReader(path: path), path) { error in
                XCTAssertEqual(error as? RecognitionError, .unreadableAudio("\(path): \(reason)"))
            }
        }
    }

    func testTranscribingAnUnreadableFileSaysSo() async throws {
        await assertThrows({ if case .unreadableAudio = $0 { true } else { false } }) {
            try await TestData.engine.transcribeFile(path: "/dev/zero")
        }
    }

    private func rms(_ samples: [Int16]) -> Double {
        (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(1, samples.count))).squareRoot()
    }
}
