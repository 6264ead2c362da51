@testable import TestSupport
import VoiceboxCore
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
        XCTAssertEqual(options.bounds[.voicesWait], .milliseconds(2500))
        XCTAssertFalse(options.debug)
        XCTAssertTrue(try DaemonOptions(arguments: ["--debug"]).debug)
    }

    /// The waits and delays that have an option of their own are bounds too, set either way.
    func testTheAudioAndModelDelaysAreBounds() throws {
        let options = try DaemonOptions(arguments: ["--bound", "grace=0.5", "--bound", "call-limit=2", "--bound", "voices-wait=30",
                                                    "--bound", "model-idle=1"])
        XCTAssertEqual(options.audio.grace, .milliseconds(500))
        XCTAssertEqual(options.audio.listeningInterruptionLimit, .seconds(2))
        XCTAssertEqual(options.bounds[.voicesWait], .seconds(30))
        XCTAssertEqual(options.bounds[.modelIdle], .seconds(1))
        let flags = try DaemonOptions(arguments: ["--grace", "0.5", "--call-limit", "2", "--voices-wait", "30", "--model-idle", "1"])
        XCTAssertEqual(flags.audio, options.audio)
        XCTAssertEqual(flags.bounds, options.bounds)
        // One place holds each: the last given wins, whichever way.
        XCTAssertEqual(try DaemonOptions(arguments: ["--grace", "0.5", "--bound", "grace=0.7"]).audio.grace, .milliseconds(700))
        XCTAssertEqual(try DaemonOptions(arguments: ["--bound", "grace=0.7", "--grace", "0.5"]).audio.grace, .milliseconds(500))
        XCTAssertEqual(DaemonOptions().audio.grace, Bound.grace.standard)
        XCTAssertEqual(DaemonOptions().audio.listeningInterruptionLimit, Bound.callLimit.standard)
    }

    /// An option and the bound of the same name take the same values, and say the same range.
    func testAnOptionAndItsBoundTakeTheSameValues() throws {
        for (option, good, bad) in [("grace", ["0", "60"], ["-0.1", "61", "nan"]),
                                    ("model-idle", ["0.001", "86400"], ["0", "86401", "inf"]),
                                    ("voices-wait", ["0.001", "3600"], ["0", "3601"]),
                                    ("call-limit", ["0.5", "3600"], ["0", "3601", "x"])] {
            for value in good {
                let flag = try DaemonOptions(arguments: ["--" + option, value]).bounds
                XCTAssertEqual(flag, try DaemonOptions(arguments: ["--bound", "\(option)=\(value)"]).bounds, "\(option) \(value)")
            }
            for value in bad {
                XCTAssertThrowsError(try DaemonOptions(arguments: ["--" + option, value]), "--\(option) \(value)")
                XCTAssertThrowsError(try DaemonOptions(arguments: ["--bound", "\(option)=\(value)"]), "--bound \(option)=\(value)")
            }
        }
    }

    func testBadArgumentsAreRefused() {
        for bad in [["--bogus"], ["--address"], ["--voices-wait", "soon"], ["--voices-wait", "-1"]] {
            XCTAssertThrowsError(try DaemonOptions(arguments: bad), "\(bad)")
        }
    }
}
