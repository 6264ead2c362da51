import Foundation
import XCTest

/// Clean-ups a test adds as it goes, run after it, the last added first: for tests that start their
/// own voiceboxd, which stops after what was added later (a helper stopped with SIGSTOP let go).
class CleanUpTestCase: XCTestCase {
    var cleanUps: [() async -> Void] = []

    /// A voiceboxd of the test's own on `stack` (the arguments are ServiceHarness's), stopped among the
    /// clean-ups.
    func startService(on stack: Stack, speechdAddress: String? = nil, addressFromEnvironment: Bool = false,
                      autospawn: Bool = false, environment: [String: String] = [:], extraArguments: [String] = [],
                      stderrFD: Int32? = nil) async throws -> ServiceHarness {
        let service = try await ServiceHarness(stack: stack, speechdAddress: speechdAddress, addressFromEnvironment: addressFromEnvironment,
                                               autospawn: autospawn, extraArguments: extraArguments, environment: environment,
                                               stderrFD: stderrFD)
        cleanUps.append { await service.stop() }
        return service
    }

    override func tearDown() async throws {
        for cleanUp in cleanUps.reversed() { await cleanUp() }
        cleanUps = []
    }
}

/// The set-up most end-to-end classes share: the test stack, a voiceboxd of the test's own on it,
/// clean-ups run before that voiceboxd stops, and for classes that decode recordings a scratch
/// directory.
class ServiceTestCase: CleanUpTestCase {
    var stack: Stack!
    var service: ServiceHarness!
    /// A scratch directory, removed after the test: only where `usesRecordings` (the recordings'
    /// WAV copies and the like go there).
    var directory: URL!

    /// The class decodes pocketsphinx-testdata's recordings: skipped where they are not installed.
    class var usesRecordings: Bool { false }
    /// The class interrupts other audio: a voiceboxd that leaves an interruption journal when it is
    /// stopped with SIGTERM fails the test (`ServiceHarness.stopLeavingNoJournal`).
    class var mustLeaveNoJournal: Bool { false }

    override func setUp() async throws {
        stack = try Stack.require()
        if Self.usesRecordings {
            try Recordings.require()
            directory = try makeTemporaryDirectory(self)
        }
        service = try await ServiceHarness(stack: stack)
    }

    override func tearDown() async throws {
        try await super.tearDown()
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
