import Foundation
import Glibc
@testable import TestSupport
import XCTest

/// pocketsphinx's own messages: in voiceboxd's log with --debug, one message a line; nowhere without it.
final class DebugLogTests: XCTestCase {
    func testPocketsphinxMessagesGoToTheLogOnlyWithDebug() async throws {
        let stack = try Stack.require()
        try Recordings.require()
        let directory = try makeTemporaryDirectory(self)

        func log(of arguments: [String]) async throws -> [Substring] {
            let path = directory.appendingPathComponent("voiceboxd\(arguments.joined()).log").path
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            XCTAssertGreaterThanOrEqual(fd, 0)
            defer { close(fd) }
            let service = try await startService(on: stack, extraArguments: arguments, stderrFD: fd)
            let recognized = try await service.recognize(["file": .string(Recordings.path("goforward.raw"))])
            XCTAssertEqual(recognized.text, "go forward ten meters")
            await service.stop()
            return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        }

        let debug = try await log(of: ["--debug"])
        let sphinx = debug.filter { $0.hasPrefix("voiceboxd: debug: pocketsphinx: ") }
        XCTAssert(sphinx.contains { $0.contains("INFO: ngram_search_fwdtree.c") }, "no search statistics in \(debug)")
        // Messages that sphinxbase prints in pieces (CMN's 13 values) arrive as one line.
        let cmn = try XCTUnwrap(sphinx.first { $0.contains("Update from <") }, "\(debug)")
        XCTAssert(cmn.hasSuffix(">"), String(cmn))
        XCTAssertEqual(cmn.split(separator: " ").filter { Double($0) != nil }.count, 13, String(cmn))
        // Every line is voiceboxd's: nothing of pocketsphinx's went to stderr bare.
        XCTAssertEqual(debug.filter { !$0.hasPrefix("voiceboxd: ") }, [])

        let quiet = try await log(of: [])
        XCTAssertEqual(quiet.filter { $0.contains("pocketsphinx") || $0.contains("INFO:") }, [])
        XCTAssert(quiet.contains { $0.hasPrefix("voiceboxd: serving") }, "\(quiet)")
    }
}
