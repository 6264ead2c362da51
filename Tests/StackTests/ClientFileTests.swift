import Foundation
import Glibc
@testable import TestSupport
import XCTest

/// The `voicebox` command where the sound server has no part: a file heard, its progress bar, the
/// status, the service's errors told in one sentence, and no service at all. One voiceboxd serves
/// the class's tests.
final class ClientFileTests: ServiceTestCase {
    override class var sharesService: Bool { true }

    /// The stack and the class's voiceboxd.
    private func classService() -> (Stack, ServiceHarness) { (stack, service) }

    func testListenToAFile() async throws {
        try Recordings.require()
        let (stack, _) = classService()
        let (status, client) = try await voicebox(stack, ["listen", "--file", Recordings.path("goforward.raw")])
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertEqual(client.stdout, "go forward ten meters\n", "only the result when stdout is no terminal")

        let (jsonStatus, json) = try await voicebox(stack, ["listen", "--json", "--file", Recordings.path("goforward.raw")])
        XCTAssertEqual(jsonStatus, 0, json.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        XCTAssertEqual(object["text"] as? String, "go forward ten meters")
        XCTAssertEqual(object["reason"] as? String, "end_of_file")
        XCTAssertEqual((object["words"] as? [[String: Any]])?.count, 4)
    }
    func testListenOpensTheFileItselfSoAnyNameWorks() async throws {
        try Recordings.require()
        let (stack, _) = classService()
        let directory = try makeTemporaryDirectory(self)
        let wav = try Recordings.wav("goforward.raw", in: directory)
        // A name that is not UTF-8 (the service never sees it: it gets the file open, as fd).
        let odd = (Array(directory.path.utf8) + Array("/x_".utf8) + [0xFF] + Array(".wav".utf8) + [0]).map { CChar(bitPattern: $0) }
        XCTAssertEqual(odd.withUnsafeBufferPointer { rename(wav, $0.baseAddress!) }, 0)
        let client = try stopsAtEnd(ClientRun(stack, shell: "exec \"$0\" listen --file \"$1/x_$(printf '\\377').wav\"", [directory.path]))
        let status = await client.finish()
        XCTAssertEqual(status, 0, client.stderr)
        XCTAssertEqual(client.stdout, "go forward ten meters\n")
        // Relative to voicebox's own directory, and a headerless .raw file.
        try FileManager.default.copyItem(atPath: Recordings.path("goforward.raw"), toPath: directory.path + "/talk.raw")
        let relative = try stopsAtEnd(ClientRun(stack, shell: "cd \"$1\" && exec \"$0\" listen --file talk.raw", [directory.path]))
        let relativeStatus = await relative.finish()
        XCTAssertEqual(relativeStatus, 0, relative.stderr)
        XCTAssertEqual(relative.stdout, "go forward ten meters\n")
        let (missingStatus, missing) = try await voicebox(stack, ["listen", "--file", directory.path + "/none.wav"])
        XCTAssertEqual(missingStatus, 1)
        XCTAssertEqual(missing.stderr, "voicebox: cannot open \(directory.path)/none.wav: No such file or directory\n")
    }
    func testListenToAFileOnATerminalShowsAProgressBar() async throws {
        try Recordings.require()
        let (stack, _) = classService()
        let (status, client) = try await voicebox(stack, ["listen", "--file", Recordings.path("goforward.raw")], terminal: true)
        XCTAssertEqual(status, 0, client.stderr)
        let output = client.stdout
        XCTAssertTrue(output.contains("decoding ["), output.debugDescription)
        XCTAssertTrue(output.contains("100%"), output.debugDescription)
        // The bar's line is cleared before the result, which stays alone.
        XCTAssertTrue(output.hasSuffix("\r\u{1B}[Kgo forward ten meters\n"), output.debugDescription)
    }
    func testStatusJSON() async throws {
        let (stack, _) = classService()
        let (status, client) = try await voicebox(stack, ["status", "--json"])
        XCTAssertEqual(status, 0, client.stderr)
        let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(client.stdout.utf8)) as? [String: Any], client.stdout)
        XCTAssertEqual(object["running"] as? Bool, true)
        XCTAssertNotNil(object["version"] as? String)
        XCTAssertNotNil(object["voice_count"] as? Int, "a number (0 until the voice list has arrived)")
        XCTAssertEqual(object["listening"] as? Bool, false)
        XCTAssertEqual(object["paused"] as? Bool, false)
        XCTAssertNotNil(object["recognition_languages"] as? [String])
        let (plainStatus, plain) = try await voicebox(stack, ["status"])
        XCTAssertEqual(plainStatus, 0)
        XCTAssertTrue(plain.stdout.contains("is running"), plain.stdout)
    }
    func testAServiceErrorIsOneSentence() async throws {
        let (stack, _) = classService()
        let (status, client) = try await voicebox(stack, ["say", "--language", "xx", "hello"])
        XCTAssertEqual(status, 1)
        XCTAssertEqual(client.stderr, "voicebox: no voice speaks 'xx'\n", "the service's sentence, no D-Bus error name")
    }
}

/// `voicebox` where no voiceboxd runs: usage errors and the service's absence, told once.
final class ClientWithoutServiceTests: XCTestCase {
    func testBadUsageAndNoService() async throws {
        let stack = try Stack.require()
        let (usage, bad) = try await voicebox(stack, ["listen", "--max-seconds", "soon"])
        XCTAssertEqual(usage, 64)
        XCTAssertTrue(bad.stderr.contains("--max-seconds takes a number, not 'soon'"), bad.stderr)
        XCTAssertEqual(bad.stdout, "")

        // No voiceboxd on the test bus (no harness started; the bus activates nothing).
        let (status, missing) = try await voicebox(stack, ["status", "--json"])
        XCTAssertEqual(status, 69, missing.stderr)
        XCTAssertEqual(missing.stdout, "{\"running\":false}\n")
        XCTAssertEqual(missing.stderr, "", "said once, on standard output")
        let (plainStatus, plain) = try await voicebox(stack, ["status"])
        XCTAssertEqual(plainStatus, 69)
        XCTAssertEqual(plain.stdout, "voiceboxd is not running (nothing owns org.voicebox.Speech1 on this bus)\n")
        XCTAssertEqual(plain.stderr, "")
        let (unreachableStatus, unreachable) = try await voicebox(stack, ["--address", "unix:path=/nonexistent/bus", "status"])
        XCTAssertEqual(unreachableStatus, 69)
        XCTAssertTrue(unreachable.stdout.hasPrefix("voiceboxd is not running: the session bus cannot be reached"), unreachable.stdout)
        XCTAssertEqual(unreachable.stderr, "")
        let (versionStatus, version) = try await voicebox(stack, ["--version"])
        XCTAssertEqual(versionStatus, 0)
        XCTAssertTrue(version.stdout.hasPrefix("voicebox "), version.stdout)
        let (sayStatus, say) = try await voicebox(stack, ["say", "hello"])
        XCTAssertEqual(sayStatus, 69)
        XCTAssertEqual(say.stderr, "voicebox: voiceboxd is not running (nothing owns org.voicebox.Speech1 on this bus)\n")
        let (noBus, _) = try await voicebox(stack, ["--address", "unix:path=/nonexistent/bus", "voices"])
        XCTAssertEqual(noBus, 69)
    }
}
