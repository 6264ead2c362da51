import Foundation
import VoiceboxThreads
import XCTest

/// The set-up most end-to-end classes share: the test stack, a voiceboxd on it, stopped after the
/// test's tear-down blocks, and for classes that decode recordings a scratch directory.
/// A class whose tests leave nothing behind for the next one (no pause held, no interruption
/// open, nothing killed) shares one voiceboxd among its tests (`sharesService`): it starts with
/// the first test and stops after the last, and each test sees only its own signals.
class ServiceTestCase: XCTestCase {
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
    /// What one test's voiceboxd is started with besides `serviceArguments`, by the test's method
    /// name (a bound that test is about): the voiceboxd set up for a test is the one it needs.
    /// Not for a class that shares its voiceboxd.
    class var argumentsByTest: [String: [String]] { [:] }

    /// The running test's method name ("testX" of XCTest's "Class.testX").
    private var testMethodName: String { String(name.split(separator: ".").last ?? "") }

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
            let own = Self.argumentsByTest[testMethodName] ?? []
            service = try await ServiceHarness(stack: stack, extraArguments: Self.serviceArguments + own)
            return
        }
        precondition(Self.argumentsByTest.isEmpty, "a class that shares its voiceboxd has no per-test arguments")
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

/// What a test starts is stopped in one way: a tear-down block (XCTest's `addTeardownBlock`),
/// registered where the thing is started. XCTest runs them after the test, whether it passed or
/// threw, the last registered first, and before the class's `tearDown`, which stops a
/// ServiceTestCase's own voiceboxd. So something registered before a voiceboxd outlives it (a
/// speech-dispatcher of the test's own), and something registered after it goes first (a stopped
/// helper let go, a player stopped).
extension XCTestCase {
    /// A voiceboxd of the test's own on `stack` (the arguments are ServiceHarness's), stopped when
    /// the test ends.
    func startService(on stack: Stack, speechdAddress: String? = nil, addressFromEnvironment: Bool = false,
                      autospawn: Bool = false, environment: [String: String] = [:], extraArguments: [String] = [],
                      stderrFD: Int32? = nil) async throws -> ServiceHarness {
        let service = try await ServiceHarness(stack: stack, speechdAddress: speechdAddress, addressFromEnvironment: addressFromEnvironment,
                                               autospawn: autospawn, extraArguments: extraArguments, environment: environment,
                                               stderrFD: stderrFD)
        addTeardownBlock { await service.stop() }
        return service
    }

    /// The test stack and a voiceboxd on it that stops when the test ends.
    func startService() async throws -> (Stack, ServiceHarness) {
        let stack = try Stack.require()
        return (stack, try await startService(on: stack))
    }
}
