@testable import TestSupport
import VoiceboxDaemon
import XCTest

/// voiceboxd's command line (no stack needed).
final class DaemonOptionsTests: XCTestCase {
    func testDefaultsAndFlags() throws {
        XCTAssertEqual(try DaemonOptions(arguments: []), DaemonOptions())
        let options = try DaemonOptions(arguments: ["--address", "unix:path=/tmp/bus", "--speechd-address", "unix_socket:/tmp/s",
                                                    "--no-autospawn", "--voices-wait", "2.5"])
        XCTAssertEqual(options.busAddress, "unix:path=/tmp/bus")
        XCTAssertEqual(options.speechdAddress, "unix_socket:/tmp/s")
        XCTAssertFalse(options.autospawn)
        XCTAssertEqual(options.voicesWait, 2.5)
        XCTAssertFalse(options.debug)
        XCTAssertTrue(try DaemonOptions(arguments: ["--debug"]).debug)
    }

    func testBadArgumentsAreRefused() {
        for bad in [["--bogus"], ["--address"], ["--voices-wait", "soon"], ["--voices-wait", "-1"]] {
            XCTAssertThrowsError(try DaemonOptions(arguments: bad), "\(bad)")
        }
    }
}
