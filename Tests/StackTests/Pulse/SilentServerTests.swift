@testable import TestSupport
import Foundation
import VoiceboxContract
import VoiceboxCore
import VoiceboxPulse
import XCTest

/// A "server" that accepts connections and never answers (a hung PulseAudio): `open` must
/// still come back, by its timeout or by cancellation.
final class SilentServerTests: XCTestCase {
    private var directory = ""
    private var listener: Int32 = -1
    private var address: String { "unix:\(directory)/native" }

    override func setUpWithError() throws {
        directory = "/tmp/vbpulse-silent-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var name = sockaddr_un()
        name.sun_family = sa_family_t(AF_UNIX)
        let path = Array("\(directory)/native".utf8CString)
        withUnsafeMutableBytes(of: &name.sun_path) { $0.copyBytes(from: path.map { UInt8(bitPattern: $0) }) }
        let bound = withUnsafePointer(to: &name) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0)
        XCTAssertEqual(listen(listener, 8), 0)  // The kernel completes connections; nobody reads.
    }

    override func tearDown() {
        close(listener)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// `open` ends at its bound (0.3 s here) with serverUnavailable naming it, rather than waiting
    /// for the server.
    func testOpenTimesOutAgainstAServerThatNeverAnswers() async throws {
        let address = address
        let opened = await outcome(within: .seconds(30)) {
            try await PulseCapture(server: address, openTimeout: .milliseconds(300)).open(source: nil)
        }
        switch opened {
        case nil: XCTFail("open did not end at its bound")
        case .success: XCTFail("opened a capture on a server that never answers")
        case .failure(let error):
            guard case .serverUnavailable(let reason) = error as? CaptureError else { return XCTFail("\(error)") }
            XCTAssert(reason.contains("within"), "the reason names the bound: \(reason)")
        }
    }

    /// Cancelling `open` ends it with CancellationError, long before its bound (30 s here).
    func testCancellingOpenReturnsPromptly() async throws {
        let capture = PulseCapture(server: address, openTimeout: .seconds(30))
        let opening = Task { try await capture.open(source: nil) }
        try await Task.sleep(for: .milliseconds(100))  // under way (a cancel before it starts proves less)
        opening.cancel()
        let result = await outcome(within: .seconds(10)) { try await opening.value }
        XCTAssertNotNil(result, "open waited for its bound after a cancel")
        XCTAssertThrowsError(try result?.get()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
    }
}
