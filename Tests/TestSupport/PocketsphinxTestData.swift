import Foundation
import XCTest
@testable import VoiceboxPocketsphinx
import VoiceboxCore
import VoiceboxModels

/// The engine the tests share, and their skip rule.
enum TestData {
    /// The installed models, decoded in the test process.
    static let engine = InProcessEngine()

    /// Skips (not fails) when the model or the recordings are not installed.
    static func requireModel() throws {
        try XCTSkipUnless(ModelCatalog.debianEnglish != nil, "pocketsphinx-en-us is not installed")
        try XCTSkipUnless(FileManager.default.fileExists(atPath: Recordings.path("goforward.raw")),
                          "pocketsphinx-testdata is not installed")
    }
}

/// Runs a program to the end; returns its standard output, or nil if it cannot run or fails.
@discardableResult
func programOutput(_ program: String, _ arguments: [String]) -> String? {
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
