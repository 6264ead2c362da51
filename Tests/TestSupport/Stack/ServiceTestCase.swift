import Foundation
import VoiceboxLock
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

/// The set-up most end-to-end classes share: the test stack, a voiceboxd on it, clean-ups run
/// before that voiceboxd stops, and for classes that decode recordings a scratch directory.
/// A class whose tests leave nothing behind for the next one (no pause held, no interruption
/// open, nothing killed) shares one voiceboxd among its tests (`sharesService`): it starts with
/// the first test and stops after the last, and each test sees only its own signals.
class ServiceTestCase: CleanUpTestCase {
    var stack: Stack!
    var service: ServiceHarness!
    /// A scratch directory, removed after the test: only where `usesRecordings` (the recordings'
    /// WAV copies and the like go there).
    var directory: URL!

    /// The class decodes pocketsphinx-testdata's recordings: skipped where they are not installed.
    class var usesRecordings: Bool { false }
    /// The class interrupts other audio: a voiceboxd that leaves an interruption journal when it is
    /// stopped with SIGTERM fails the test (`ServiceHarness.stopLeavingNoJournal`). Such a class
    /// starts a voiceboxd per test.
    class var mustLeaveNoJournal: Bool { false }
    /// The class's tests share one voiceboxd (see above).
    class var sharesService: Bool { false }
    /// What the class's voiceboxd is started with besides the harness's own arguments, e.g. the
    /// bounds its tests are about, made small: `["--bound", "stream-release=0.5"]`.
    class var serviceArguments: [String] { [] }

    /// The voiceboxd each sharing class runs, by class.
    private static let shared = Locked<[ObjectIdentifier: ServiceHarness]>([:])

    private var sharing: Bool { Self.sharesService && !Self.mustLeaveNoJournal }

    override func setUp() async throws {
        stack = try Stack.require()
        if Self.usesRecordings {
            try Recordings.require()
            directory = try makeTemporaryDirectory(self)
        }
        guard sharing else {
            service = try await ServiceHarness(stack: stack, extraArguments: Self.serviceArguments)
            return
        }
        let key = ObjectIdentifier(Self.self)
        if let running = Self.shared.withLock({ $0[key] }), running.daemon.poll() == nil {
            running.forgetSignals()
            service = running
        } else {
            service = try await ServiceHarness(stack: stack, extraArguments: Self.serviceArguments)
            let started = service!
            Self.shared.withLock { $0[key] = started }
        }
    }

    override func tearDown() async throws {
        try await super.tearDown()
        if sharing {
            service = nil
        } else if Self.mustLeaveNoJournal {
            await service?.stopLeavingNoJournal()
        } else {
            await service?.stop()
        }
        service = nil
    }

    /// After the class's last test: its shared voiceboxd stops. (XCTest's class tear-down is
    /// synchronous; the stop is bounded by the harness: SIGTERM, then the daemon's own exit.)
    override class func tearDown() {
        guard let running = shared.withLock({ $0.removeValue(forKey: ObjectIdentifier(self)) }) else { return }
        let stopped = DispatchSemaphore(value: 0)
        Task {
            await running.stop()
            stopped.signal()
        }
        stopped.wait()
        super.tearDown()
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
