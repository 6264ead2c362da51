import Foundation
import Glibc
@testable import TestSupport
import XCTest

/// The `voicebox` command-line client against a running service.
final class ClientTests: XCTestCase {
    /// Runs voicebox with `arguments`; returns its exit status and standard output.
    private func voicebox(_ stack: Stack, _ arguments: [String]) async throws -> (Int32, String) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        let process = try Subprocess(stack.clientPath, arguments, stdoutFD: fds[1])
        close(fds[1])
        var output = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(fds[0], &buffer, buffer.count)
            guard count > 0 else { break }
            output.append(contentsOf: buffer[0..<count])
        }
        close(fds[0])
        let status = await process.wait(timeout: .seconds(60)) ?? -1
        return (status, String(decoding: output, as: UTF8.self))
    }

    // What the sound server decides here: say waits for the end of speech
    func testSayVoicesAndErrors() async throws {
        let (stack, service) = try await startService()

        let (sayStatus, _) = try await voicebox(stack, ["say", "--language", "en-GB", "--rate", "1.2", "Hello", "from", "the", "client"])
        XCTAssertEqual(sayStatus, 0)
        // `say` waits: the utterance has finished by the time it exits.
        let finished = service.signals.filter { $0.member == "SpeechFinished" }.map { $0.arguments[1].string }
        XCTAssertEqual(finished, ["done"])

        let (voicesStatus, listing) = try await voicebox(stack, ["voices", "en-GB"])
        XCTAssertEqual(voicesStatus, 0)
        let lines = listing.split(separator: "\n")
        XCTAssertFalse(lines.isEmpty)
        XCTAssertTrue(lines.allSatisfy { $0.split(separator: "\t")[2].lowercased().hasPrefix("en-gb") }, listing)

        let (badStatus, _) = try await voicebox(stack, ["say", "--rate", "9", "too fast"])
        XCTAssertEqual(badStatus, 1)
        let (usageStatus, _) = try await voicebox(stack, ["frobnicate"])
        XCTAssertEqual(usageStatus, 64)
    }
}
