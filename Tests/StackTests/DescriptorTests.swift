@testable import TestSupport
import Foundation
import Glibc
import VoiceboxBus
import VoiceboxContract
import XCTest

/// Descriptors that callers pass (type `h`) belong to the call: whatever voiceboxd does with the
/// call, it must not keep them. A service that keeps one per call runs out after its limit's worth
/// of calls, and any caller can make such calls.
final class DescriptorTests: XCTestCase {
    /// A shape of call carrying a descriptor, and the error it must get.
    struct Shape: Sendable {
        let name: String
        let member: String
        let expectedError: String
        let arguments: @Sendable (Int32) -> [DBusValue]
    }

    static let shapes: [Shape] = [
        Shape(name: "Speak(\"hi\", {fd: <h>})", member: "Speak", expectedError: "org.voicebox.Error.InvalidArgument") {
            [.string("hi"), .vardict(["fd": .unixFD($0)])]
        },
        Shape(name: "Recognize({file: <h>})", member: "Recognize", expectedError: "org.voicebox.Error.InvalidArgument") {
            [.vardict(["file": .unixFD($0)])]
        },
        Shape(name: "ListVoices(<h>) (wrong signature)", member: "ListVoices", expectedError: "org.freedesktop.DBus.Error.InvalidArgs") {
            [.unixFD($0)]
        },
    ]

    static let totalCalls = 1000
    static let batch = 50

    func testDescriptorsPassedInCallsAreNotKept() async throws {
        let (_, service) = try await startService()
        // Start-up (the voice listing, the speech provider's spare modules) finishes first.
        try await service.waitUntilSettled()
        let pid = service.daemon.pid

        // What is sent: /dev/null and both ends of a pipe, in turn. Each call carries a duplicate.
        let devNull = open("/dev/null", O_RDWR | O_CLOEXEC)
        var ends: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&ends), 0)
        XCTAssertGreaterThanOrEqual(devNull, 0)
        defer { [devNull, ends[0], ends[1]].forEach { close($0) } }
        let descriptors = [devNull, ends[0], ends[1]]

        // Warm-up: whatever the first such calls allocate once (a thread, a cache) is not a leak.
        for shape in Self.shapes {
            _ = await Self.send(shape, count: 6, descriptors: descriptors, on: service)
        }
        guard let before = await settledDescriptorCount(pid, atMost: 0, settle: .milliseconds(500)) else {
            return XCTFail("voiceboxd is gone after the warm-up")
        }

        let started = ContinuousClock.now
        var counts: [(shape: String, calls: Int, descriptors: Int)] = []
        var last = before
        for (index, shape) in Self.shapes.enumerated() {
            // 1000 calls in all, split evenly.
            let calls = Self.totalCalls / Self.shapes.count + (index < Self.totalCalls % Self.shapes.count ? 1 : 0)
            let outcomes = await Self.send(shape, count: calls, descriptors: descriptors, on: service)
            let wrong = outcomes.filter { $0 != shape.expectedError }
            XCTAssertTrue(wrong.isEmpty, "\(shape.name): \(wrong.count) of \(calls) calls did not fail with \(shape.expectedError): "
                          + "\(Set(wrong).sorted().prefix(5))")
            guard let now = await settledDescriptorCount(pid, atMost: last + 2, settle: .seconds(1)) else {
                return XCTFail("voiceboxd died during the \(shape.name) calls")
            }
            counts.append((shape.name, calls, now - last))
            last = now
        }
        let elapsed = ContinuousClock.now - started
        guard let after = await settledDescriptorCount(pid, atMost: before + 2) else {
            return XCTFail("voiceboxd is gone after the calls")
        }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let summary = counts.map { "\($0.shape): \($0.calls) calls, \($0.descriptors >= 0 ? "+" : "")\($0.descriptors)" }
            .joined(separator: "; ")
        print("DescriptorTests: voiceboxd held \(before) descriptors before \(Self.totalCalls) calls, \(after) after "
              + "(\(summary)); \(Int(Double(Self.totalCalls) / seconds)) calls/s")
        XCTAssertLessThanOrEqual(abs(after - before), 2,
                                 "voiceboxd held \(before) descriptors before \(Self.totalCalls) calls carrying one each and \(after) after: \(summary)")
        XCTAssertNil(service.daemon.poll(), "voiceboxd exited")
    }

    /// Sends `count` calls of `shape`, `batch` at a time; returns each call's error name ("" for a reply).
    static func send(_ shape: Shape, count: Int, descriptors: [Int32], on service: ServiceHarness) async -> [String] {
        var outcomes: [String] = []
        var sent = 0
        while sent < count {
            let size = min(batch, count - sent)
            let first = sent
            outcomes += await withTaskGroup(of: String.self) { group in
                for index in first..<(first + size) {
                    let arguments = shape.arguments(descriptors[index % descriptors.count])
                    group.addTask {
                        do throws(DBusError) {
                            _ = try await service.client.call(destination: ServiceHarness.name, path: ServiceHarness.path,
                                                              interface: ServiceHarness.interface, member: shape.member,
                                                              arguments: arguments, timeout: .seconds(10))
                            return ""
                        } catch {
                            return error.name
                        }
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            sent += size
        }
        return outcomes
    }
}
