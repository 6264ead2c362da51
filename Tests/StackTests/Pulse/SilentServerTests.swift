@testable import TestSupport
import Foundation
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

    func testOpenTimesOutAgainstAServerThatNeverAnswers() async throws {
        let started = ContinuousClock.now
        do {
            _ = try await PulseCapture(server: address, openTimeout: .milliseconds(300)).open(source: nil)
            XCTFail("opened a capture on a server that never answers")
        } catch let error as CaptureError {
            guard case .serverUnavailable = error else { return XCTFail("\(error)") }
        }
        let took = ContinuousClock.now - started
        XCTAssertGreaterThanOrEqual(took, .milliseconds(300))
        XCTAssertLessThan(took, .seconds(2))
    }

    func testCancellingOpenReturnsPromptly() async throws {
        let capture = PulseCapture(server: address, openTimeout: .seconds(30))
        let opening = Task { try await capture.open(source: nil) }
        try await Task.sleep(for: .milliseconds(100))
        let cancelled = ContinuousClock.now
        opening.cancel()
        let result = await opening.result
        XCTAssertLessThan(ContinuousClock.now - cancelled, .milliseconds(500))
        XCTAssertThrowsError(try result.get()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
    }
}
