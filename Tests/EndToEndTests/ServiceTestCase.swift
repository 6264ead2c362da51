import Foundation
import TestSupport
import XCTest

/// The set-up most end-to-end classes share: the test stack, a voiceboxd of the test's own on it, a
/// scratch directory, and clean-ups run before that voiceboxd stops.
class ServiceTestCase: XCTestCase {
    var stack: Stack!
    var service: ServiceHarness!
    /// Removed after the test.
    var directory: URL!
    /// Run after the test, the last added first, before the service stops.
    var cleanUps: [() async -> Void] = []

    /// The class decodes pocketsphinx-testdata's recordings: skipped where they are not installed.
    class var usesRecordings: Bool { false }
    /// The class interrupts other audio: a voiceboxd that leaves an interruption journal when it is
    /// stopped with SIGTERM fails the test (`ServiceHarness.stopLeavingNoJournal`).
    class var mustLeaveNoJournal: Bool { false }

    override func setUp() async throws {
        stack = try Stack.require()
        if Self.usesRecordings { try Recordings.require() }
        directory = try makeTemporaryDirectory(self)
        service = try await ServiceHarness(stack: stack)
    }

    override func tearDown() async throws {
        for cleanUp in cleanUps.reversed() { await cleanUp() }
        cleanUps = []
        if Self.mustLeaveNoJournal {
            await service?.stopLeavingNoJournal()
        } else {
            await service?.stop()
        }
        service = nil
    }
}

extension XCTestCase {
    /// The test stack and a voiceboxd on it that stops when the test ends: for tests that start
    /// their own.
    func startService() async throws -> (Stack, ServiceHarness) {
        let stack = try Stack.require()
        let service = try await ServiceHarness(stack: stack)
        addTeardownBlock { await service.stop() }
        return (stack, service)
    }
}
