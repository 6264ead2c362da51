@testable import TestSupport
import Foundation
import VoiceboxContract
import VoiceboxCore
import XCTest

/// voiceboxd's own JSON (it links no Foundation) against Foundation's JSONEncoder and
/// JSONDecoder: a journal written by either reads with the other, so an upgrade across the change
/// still restores what the previous voiceboxd left.
final class JSONTests: XCTestCase {
    static let journal: InterruptionJournal = {
        var journal = InterruptionJournal(reason: .listening, id: UInt64.max - 1)
        journal.muted = [.init(id: 7, processID: 4242, applicationName: "Firefox \"nightly\"\n\u{1}é🎵")]
        journal.ducked = [.init(id: 9, processID: nil, applicationName: nil, memoryKey: "sink-input-by-media-role:music",
                                originalVolume: [65536, 30000], ourVolume: [11654, 5333])]
        journal.players = [MediaPlayer(name: "org.mpris.MediaPlayer2.mpv", owner: ":1.42", processID: 99, position: -5)]
        journal.memory = [MemoryRecord(name: "sink-input-by-application-name:mpv",
                                       before: RememberedSetting(name: "sink-input-by-application-name:mpv", muted: true,
                                                                 volume: [30000, 30000], channelMap: [1, 2], device: "voicebox_out"),
                                       muted: true, levels: [[1, 2], []], original: nil),
                          MemoryRecord(name: "x", before: nil)]
        return journal
    }()

    func testOurJournalReadsWithFoundation() throws {
        let ours = try JSON.encode(Self.journal)
        XCTAssertEqual(try JSONDecoder().decode(InterruptionJournal.self, from: Data(ours)), Self.journal)
    }

    func testFoundationsJournalReadsWithOurs() throws {
        let theirs = try JSONEncoder().encode(Self.journal)
        XCTAssertEqual(try JSON.decode(InterruptionJournal.self, from: Array(theirs)), Self.journal)
        // An empty journal of an earlier version (no reason, id or memory).
        XCTAssertEqual(try JSON.decode(InterruptionJournal.self, from: Array(#"{"muted":[],"ducked":[],"players":[]}"#.utf8)),
                       InterruptionJournal())
    }

    func testStringsRoundTripEveryEscape() throws {
        let text = "a\"b\\c/d\u{0}\u{1f}\t\r\n\u{7f}é€😀"
        XCTAssertEqual(try JSON.decode(String.self, from: try JSON.encode(text)), text)
        XCTAssertEqual(try JSON.decode(String.self, from: Array(#""\ud83d\ude00 \u00e9 \/""#.utf8)), "😀 é /")
    }

    func testNumbersKeepTheirValue() throws {
        XCTAssertEqual(try JSON.decode(UInt64.self, from: try JSON.encode(UInt64.max)), UInt64.max)
        XCTAssertEqual(try JSON.decode(Int64.self, from: try JSON.encode(Int64.min)), Int64.min)
        XCTAssertEqual(try JSON.decode(Double.self, from: try JSON.encode(0.1)), 0.1)
        XCTAssertEqual(try JSON.decode(Int.self, from: Array("3.0".utf8)), 3, "as Foundation reads it")
        XCTAssertThrowsError(try JSON.decode(Int.self, from: Array("3.5".utf8)))
        XCTAssertThrowsError(try JSON.decode(UInt8.self, from: Array("256".utf8)))
        XCTAssertThrowsError(try JSON.encode(Double.nan))
    }

    /// A damaged journal is refused, never a crash: the service then starts with none.
    func testBrokenTextIsAnErrorNotACrash() {
        for text in ["", "{", "[1,]", #"{"a" 1}"#, #""abc"#, #""\x""#, #""\ud800""#, "tru", "1 2", "-", "\u{1}",
                     String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)] {
            XCTAssertThrowsError(try JSON.decode(InterruptionJournal.self, from: Array(text.utf8)), text.prefix(20).description)
        }
        XCTAssertThrowsError(try JSON.decode(InterruptionJournal.self, from: Array(#"{"muted":[{"id":"seven"}]}"#.utf8)))
        XCTAssertThrowsError(try JSON.decode(InterruptionJournal.self, from: Array("[]".utf8)))
    }
}

/// The libc file operations the service uses instead of Foundation's.
final class FileSystemTests: XCTestCase {
    func testReplaceWritesAtOnceAndReadsBack() throws {
        let directory = NSTemporaryDirectory() + "voicebox-fs-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/a/b/journal.json"
        try FileSystem.createDirectories(FileSystem.directory(of: path), mode: 0o700)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: directory + "/a")[.posixPermissions] as? Int, 0o700)
        try FileSystem.replace(path, with: Array("one".utf8))
        try FileSystem.replace(path, with: Array("two".utf8))
        XCTAssertEqual(FileSystem.text(atPath: path), "two")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory + "/a/b"), ["journal.json"], "no temporary file left")
        XCTAssert(FileSystem.exists(path))
        FileSystem.remove(path)
        XCTAssertFalse(FileSystem.exists(path))
        XCTAssertNil(FileSystem.contents(atPath: path))
        XCTAssertEqual(FileSystem.entries(ofDirectory: directory + "/a"), ["b"])
    }

    func testOnlyRegularFilesAreReadAndNeverAFIFO() throws {
        let fifo = NSTemporaryDirectory() + "voicebox-fifo-\(getpid())"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        defer { unlink(fifo) }
        XCTAssertNil(FileSystem.contents(atPath: fifo), "a FIFO with no writer must not block")
        XCTAssertNil(FileSystem.contents(atPath: "/"))
        XCTAssertNotNil(FileSystem.text(atPath: "/proc/self/status"), "/proc entries read whole")
        XCTAssertNil(FileSystem.contents(atPath: "/proc/self/status", limit: 10))
    }

    func testTheDirectoryOfAPath() {
        XCTAssertEqual(FileSystem.directory(of: "/run/user/1/voicebox/interruption.json"), "/run/user/1/voicebox")
        XCTAssertEqual(FileSystem.directory(of: "/x"), "/")
        XCTAssertEqual(FileSystem.directory(of: "x"), ".")
    }

    func testTheEnvironmentIsFoundations() {
        XCTAssertEqual(ProcessEnvironment.variables, ProcessInfo.processInfo.environment)
        // $HOME first, as glib's g_get_home_dir (libspeechd's default address) and the XDG rules
        // read it; Foundation's NSHomeDirectory() reads the password database only.
        XCTAssertEqual(ProcessEnvironment.homeDirectory, ProcessInfo.processInfo.environment["HOME"] ?? NSHomeDirectory())
        XCTAssertEqual(ProcessEnvironment.onlineProcessors, ProcessInfo.processInfo.activeProcessorCount)
        XCTAssertEqual(" \t a b\n".trimmingWhitespace, "a b")
        XCTAssertEqual(" \n".trimmingWhitespace, "")
    }
}
