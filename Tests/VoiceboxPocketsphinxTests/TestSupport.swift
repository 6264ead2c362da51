import Foundation
import XCTest
@testable import VoiceboxPocketsphinx
import VoiceboxCore

/// pocketsphinx-testdata's recordings with what is said in them.
enum TestData {
    static let directory = "/usr/share/pocketsphinx/test/data"
    static func path(_ name: String) -> String { directory + "/" + name }

    /// One engine for all tests: its pool keeps models warm between them, as in the service.
    static let engine = PocketsphinxEngine(idleUnloadAfter: .seconds(600))

    /// Skips (not fails) when the model or the recordings are not installed.
    static func requireModel() throws {
        try XCTSkipUnless(ModelCatalog.debianEnglish != nil, "pocketsphinx-en-us is not installed")
        try XCTSkipUnless(FileManager.default.fileExists(atPath: path("goforward.raw")),
                          "pocketsphinx-testdata is not installed")
    }

    static func cardsGrammar() throws -> String {
        try String(contentsOfFile: path("cards/cards.gram"), encoding: .utf8)
    }

    /// cards.transcription: "<s> ten of clubs  </s> (001)" → ["001": "ten of clubs"].
    static func cardsTranscription() throws -> [String: String] {
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

/// A fresh directory under /tmp, removed by the test case's teardown.
func makeTemporaryDirectory(_ testCase: XCTestCase) throws -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("voicebox-ps-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    testCase.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
    return url
}

/// Runs a program to the end; returns its standard output, or nil if it cannot run or fails.
@discardableResult
func runProgram(_ program: String, _ arguments: [String]) -> String? {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return nil }
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    return String(decoding: data, as: UTF8.self)
}

func assertThrows<T>(_ expected: (RecognitionError) -> Bool, _ message: String = "",
                     file: StaticString = #filePath, line: UInt = #line,
                     _ body: () async throws -> T) async {
    do {
        _ = try await body()
        XCTFail("no error thrown. \(message)", file: file, line: line)
    } catch let error as RecognitionError {
        XCTAssertTrue(expected(error), "unexpected \(error). \(message)", file: file, line: line)
    } catch {
        XCTFail("unexpected \(error). \(message)", file: file, line: line)
    }
}
