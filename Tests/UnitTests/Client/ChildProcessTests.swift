@testable import TestSupport
import VoiceboxInsertion
import XCTest

/// The insertion helpers' runner, over VoiceboxSpawn: a helper's own complaint comes back.
final class ChildProcessTests: XCTestCase {
    func testStandardErrorAndStatusComeBack() throws {
        let result = try ChildProcess.run("/bin/sh", ["-c", "echo typed; echo 'xdotool: no display' >&2; exit 1"], captureOutput: true)
        XCTAssertEqual(result.status, 1)
        XCTAssertEqual(String(decoding: result.output, as: UTF8.self), "typed\n")
        XCTAssertEqual(result.errorText, "xdotool: no display")
        XCTAssertFalse(result.timedOut)
    }

    func testInputIsWrittenAndASignalIsAStatusAbove128() throws {
        let echoed = try ChildProcess.run("/bin/cat", [], input: Array("café".utf8), captureOutput: true)
        XCTAssertEqual(String(decoding: echoed.output, as: UTF8.self), "café")
        let killed = try ChildProcess.run("/bin/sh", ["-c", "kill -TERM $$"])
        XCTAssertEqual(killed.status, 128 + 15)
        XCTAssert(killed.termination.description.contains("SIGTERM"), killed.termination.description)
    }

    func testAHungHelperIsKilledAtItsTimeout() throws {
        let result = try ChildProcess.run("/bin/sleep", ["30"], timeout: .milliseconds(200))
        XCTAssert(result.timedOut)
    }

    func testAMissingProgramIsAnInsertionError() {
        XCTAssertThrowsError(try ChildProcess.run("/nonexistent/xdotool", [])) { error in
            XCTAssertEqual((error as? InsertionError)?.description, "cannot run /nonexistent/xdotool: No such file or directory")
        }
    }
}
