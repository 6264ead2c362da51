import Foundation
import Glibc
@testable import TestSupport
import VoiceboxBus
import VoiceboxContract
import XCTest

/// Speak with `output`: the utterance written as a WAV file into the caller's file or pipe instead
/// of being played, with the signals of played speech, against the real stack; what lands in the
/// file is held against espeak-ng's own rendering, and the sink is listened to.
final class SpeakOutputTests: ServiceTestCase {
    override class var sharesService: Bool { true }
    static let voice = SpielClient.voice
    static let marked = "<speak>Written <mark name=\"a\"/>into a file. <mark name=\"b\"/>Nobody hears it.</speak>"

    func temporaryFile(_ flags: Int32 = O_WRONLY | O_CREAT | O_TRUNC) throws -> (path: String, fd: Int32) {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("voicebox-output-\(UUID().uuidString).wav").path
        let fd = open(path, flags | O_CLOEXEC, 0o600)
        XCTAssertGreaterThanOrEqual(fd, 0)
        addTeardownBlock { close(fd); unlink(path) }
        return (path, fd)
    }

    func bytes(of path: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: path))) }

    /// A pipe: the WAV streams while it is read, its header with the unknown-length sizes
    /// `espeak-ng --stdout` writes; the reader gets all of espeak-ng's audio.
    func testAPipeGetsTheWAVWhileItIsRead() async throws {
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        let text = "Streamed into a pipe while the reader reads it."
        let id = try await service.speak(text, ["output": .unixFD(ends[1]), "voice": .string(Self.voice)])
        close(ends[1])
        let bytes = try await readAll(ends[0])
        close(ends[0])
        let wav = try SpeechAudio.wav(bytes)
        XCTAssertEqual(wav.dataSize, 0x7FFF_F000)
        XCTAssertEqual(wav.riffSize, 0x7FFF_F024)
        wav.audio.assertMatches(try SpeechAudio.espeak(text), "the pipe")
        let reason = try await service.waitForFinish(id)
        XCTAssertEqual(reason, "done")
    }

    /// StopSpeaking ends a file being written (its reader not reading): SpeechFinished cancelled;
    /// so does the reader closing its end of the pipe.
    func testStopSpeakingOrTheReaderClosingEndsIt() async throws {
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        let text = String(repeating: Texts.long + " ", count: 8)
        let stopped = try await service.speak(text, ["output": .unixFD(ends[1]), "voice": .string(Self.voice)])
        close(ends[1])
        try await waitUntil("SpeechStarted") { self.service.events(of: stopped).contains("SpeechStarted") }
        try await service.proxy.call(Speech1.stopSpeaking, stopped)
        let reason = try await service.waitForFinish(stopped)
        XCTAssertEqual(reason, "cancelled")
        let rest = try await readAll(ends[0])  // ends: the descriptor was closed
        XCTAssertLessThan(rest.count, 200_000, "it went on writing after the stop")
        close(ends[0])

        XCTAssertEqual(pipe(&ends), 0)
        let abandoned = try await service.speak(text, ["output": .unixFD(ends[1]), "voice": .string(Self.voice)])
        close(ends[1])
        var first = [UInt8](repeating: 0, count: 4096), taken = 0
        while taken < 100 {  // the header, then some audio
            let count = read(ends[0], &first, first.count)
            guard count > 0 else { break }
            taken += count
        }
        XCTAssertGreaterThanOrEqual(taken, 100)
        close(ends[0])
        let gone = try await service.waitForFinish(abandoned)
        XCTAssertEqual(gone, "cancelled")
    }

    /// Every argument is checked before a byte is written: a descriptor open only for reading, a
    /// socket, `others` with `output`, an unknown voice, too much text, bad SSML.
    func testBadArgumentsAreRefusedBeforeAnythingIsWritten() async throws {
        let (path, fd) = try temporaryFile()
        let (_, readOnly) = try temporaryFile(O_RDONLY | O_CREAT)
        var pair: [Int32] = [-1, -1]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair), 0)
        defer { close(pair[0]); close(pair[1]) }
        let cases: [(String, [String: DBusValue], String)] = [
            ("hello", ["output": .unixFD(readOnly)], "InvalidArgument"),
            ("hello", ["output": .unixFD(pair[0])], "InvalidArgument"),
            ("hello", ["output": .unixFD(fd), "others": .string("mix")], "InvalidArgument"),
            ("hello", ["output": .unixFD(fd), "voice": .string("espeak-ng/No Such Voice")], "UnknownVoice"),
            (String(repeating: "a", count: 70_000), ["output": .unixFD(fd)], "TooLarge"),
            ("<speak><audio src=\"/etc/passwd\"/></speak>", ["output": .unixFD(fd), "ssml": .boolean(true)], "InvalidArgument"),
        ]
        for (text, options, expected) in cases {
            let error = await service.errorName("Speak", [.string(text), .vardict(options)])
            XCTAssertEqual(error, "org.voicebox.Error." + expected, "\(options.keys.sorted())")
        }
        XCTAssertEqual(try bytes(of: path).count, 0, "something was written")
    }

    /// `voicebox say --output FILE` writes the WAV and returns once it is whole.
    func testSayOutputWritesTheFile() async throws {
        let (path, _) = try temporaryFile()  // the client opens it itself
        let text = "Said into a file."
        let result = try runProgram([stack.clientPath, "say", "--voice", Self.voice, "--output", path, text], seconds: 60)
        XCTAssertEqual(result.status, 0)
        let wav = try SpeechAudio.wav(try bytes(of: path))
        wav.audio.assertMatches(try SpeechAudio.espeak(text), "say --output")
        // A request refused (an unknown voice) leaves the file as it was, and nothing beside it.
        let before = try bytes(of: path)
        let refused = try runProgram([stack.clientPath, "say", "--voice", "espeak-ng/No Such Voice", "--output", path, "x"], seconds: 60)
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertEqual(try bytes(of: path), before, "the earlier WAV was emptied")
        let directory = (path as NSString).deletingLastPathComponent
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".voicebox-") }, [])
    }
}
