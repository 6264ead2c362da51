import Foundation
import VoiceboxContract
import VoiceboxCore
import VoiceboxThreads
import XCTest
@testable import VoiceboxSpeechd

/// The stack the project's test script provides.
enum TestStack {
    /// `SPEECHD_ADDRESS` of the running speech-dispatcher; the tests skip without it.
    static func address() throws -> String {
        guard let address = ProcessInfo.processInfo.environment["SPEECHD_ADDRESS"], !address.isEmpty else {
            throw XCTSkip("SPEECHD_ADDRESS is not set: no speech-dispatcher to test against")
        }
        return address
    }

    /// A ready configuration directory for extra private speech-dispatcher instances.
    static func configDirectory() throws -> String {
        guard let directory = ProcessInfo.processInfo.environment["VOICEBOX_SPEECHD_CONFIG"], !directory.isEmpty else {
            throw XCTSkip("VOICEBOX_SPEECHD_CONFIG is not set")
        }
        return directory
    }
}

/// Collects a synthesizer's events and waits for them with a deadline (never hangs).
final class EventRecorder: Sendable {
    private final class Log: Sendable {
        let entries = Locked<[(event: SynthesisEvent, at: ContinuousClock.Instant)]>([])
    }

    private let log = Log()
    private let reader: Task<Void, Never>

    init(_ synthesizer: SpeechDispatcherSynthesizer) {
        let log = self.log
        reader = Task { [events = synthesizer.events] in
            for await event in events {
                log.entries.withLock { $0.append((event, ContinuousClock.now)) }
            }
        }
    }

    deinit { reader.cancel() }

    var events: [SynthesisEvent] { log.entries.withLock { $0.map(\.event) } }

    func events(for id: UInt64) -> [SynthesisEvent] {
        events.filter { event in
            switch event {
            case .started(let other), .mark(let other, _), .finished(let other, _), .failed(let other, _): other == id
            case .available, .unavailable: false
            }
        }
    }

    func time(of wanted: SynthesisEvent) -> ContinuousClock.Instant? {
        log.entries.withLock { $0.first { $0.event == wanted }?.at }
    }

    /// Waits until `condition` holds for the events so far; false on timeout.
    @discardableResult
    func wait(timeout seconds: Double, until condition: ([SynthesisEvent]) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if condition(events) { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition(events)
    }

    @discardableResult
    func wait(for event: SynthesisEvent, timeout: Double) async -> Bool {
        await wait(timeout: timeout) { $0.contains(event) }
    }

    /// Waits for the `.finished` of `id` and returns how it ended.
    func end(of id: UInt64, timeout: Double) async -> SynthesisEnd? {
        func find(_ events: [SynthesisEvent]) -> SynthesisEnd? {
            for case .finished(id, let end) in events { return end }
            return nil
        }
        await wait(timeout: timeout) { find($0) != nil }
        return find(events)
    }

    func count(_ event: SynthesisEvent) -> Int { events.filter { $0 == event }.count }
}

/// What a synthesizer said in its log (`Configuration.log`), printed and kept for the test to read:
/// how recovery went, and which bound it met.
final class SynthesizerLog: Sendable {
    private let lines = Locked<[String]>([])

    func add(_ line: String) {
        print("synthesizer: " + line)
        lines.withLock { $0.append(line) }
    }

    var all: [String] { lines.withLock { $0 } }

    func count(containing part: String) -> Int { all.filter { $0.contains(part) }.count }

    /// Waits until a line holds `part`; false when none did within `timeout` seconds (a give-up).
    func wait(for part: String, timeout: Double = 30) async -> Bool {
        let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
        while ContinuousClock.now < deadline {
            if count(containing: part) > 0 { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return count(containing: part) > 0
    }
}

extension EventRecorder {
    /// Where `event` first came among all events, for asserting order; nil if it never came.
    func position(of event: SynthesisEvent) -> Int? { events.firstIndex(of: event) }
}

extension SynthesisRequest {
    static let longText = "This is a long sentence that speech dispatcher will take several seconds to say, "
        + "because it goes on and on about nothing in particular, just to keep the synthesizer busy for a while."
}

/// What the synthesizer test classes share: the synthesizers and private servers a test made are
/// shut down and killed after it (tear-down blocks registered as each is made).
class SynthesizerTestCase: XCTestCase {
    /// Connection attempts 0.05 s apart, doubling to 0.2 s (not 0.25 s to 10 s): a server that comes
    /// (back) is found at once, and a synthesizer without one tries many times while a test runs.
    static let quickReconnect = Bounds([.speechdReconnectFirst: .milliseconds(50), .speechdReconnectLimit: .milliseconds(200)])

    /// A synthesizer on `address` (never autospawning unless told), its events recorded, its log to `log`.
    func make(_ address: String, bounds: Bounds = Bounds(), recovery: SpeechDispatcherSynthesizer.Recovery = .restart,
              autospawn: Bool = false, probeTimeout: Double? = nil, log: SynthesizerLog? = nil) -> (SpeechDispatcherSynthesizer, EventRecorder) {
        var configuration = SpeechDispatcherSynthesizer.Configuration(address: address, autospawn: autospawn, clientName: "voicebox-tests",
                                                                      bounds: bounds, recovery: recovery)
        configuration.probeTimeout = probeTimeout
        if let log { configuration.log = { log.add($0) } }
        let synthesizer = SpeechDispatcherSynthesizer(configuration: configuration)
        addTeardownBlock { synthesizer.shutdown() }
        return (synthesizer, EventRecorder(synthesizer))
    }

    /// `make`, once it has connected.
    func connected(_ address: String, bounds: Bounds = Bounds(), recovery: SpeechDispatcherSynthesizer.Recovery = .restart,
                   autospawn: Bool = false, probeTimeout: Double? = nil,
                   log: SynthesizerLog? = nil) async throws -> (SpeechDispatcherSynthesizer, EventRecorder) {
        let (synthesizer, recorder) = make(address, bounds: bounds, recovery: recovery, autospawn: autospawn,
                                           probeTimeout: probeTimeout, log: log)
        guard await recorder.wait(for: .available, timeout: 20) else {
            XCTFail("no .available from \(address): \(recorder.events)")
            throw SynthesizerError.unavailable("not connected")
        }
        return (synthesizer, recorder)
    }

    /// A private server, started, that stops when the test ends.
    func startedServer() async throws -> PrivateSpeechd {
        _ = try TestStack.address()
        return try await ownSpeechd(config: try TestStack.configDirectory())
    }

    /// listVoices, bounded: fails the test instead of hanging.
    func listVoices(_ synthesizer: SpeechDispatcherSynthesizer, timeout: Double = 30) async throws -> [Voice] {
        try await bounded(timeout, "listVoices") { try await synthesizer.listVoices() }
    }

    static func isUnavailable(_ event: SynthesisEvent) -> Bool {
        if case .unavailable = event { true } else { false }
    }

    static func isFailure(_ event: SynthesisEvent) -> Bool {
        if case .failed = event { true } else { false }
    }
}

/// Runs `operation`, failing the test (and throwing) if it has not returned after `timeout` seconds.
func bounded<T: Sendable>(_ timeout: Double, _ what: String,
                          _ operation: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: .seconds(timeout))
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            XCTFail("\(what) did not return within \(timeout) s")
            throw SynthesizerError.unavailable("timeout")
        }
        return value
    }
}

/// The listening socket bound to `path` in process `pid`, duplicated into this one
/// (pidfd_getfd, Linux 5.6, glibc 2.36), or nil. /proc/net/unix is read whole: Foundation's
/// String(contentsOfFile:) stopped at its first page once the run had many sockets open, and
/// missed the server's line (this test then failed whenever it came late in its class).
func duplicateOfListeningSocket(_ path: String, heldBy pid: pid_t) -> Int32? {
    guard let table = FileSystem.contents(atPath: "/proc/net/unix", limit: .max).map({ String(decoding: $0, as: UTF8.self) }),
          let line = table.split(separator: "\n").first(where: { $0.hasSuffix(" " + path) && $0.contains(" 00010000 ") }),
          let inode = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst(6).first else { return nil }
    let fdDirectory = "/proc/\(pid)/fd"
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: fdDirectory),
          let number = entries.first(where: {
              (try? FileManager.default.destinationOfSymbolicLink(atPath: fdDirectory + "/" + $0)) == "socket:[\(inode)]"
          }).flatMap({ Int32($0) }) else { return nil }
    typealias PidfdOpen = @convention(c) (pid_t, UInt32) -> Int32
    typealias PidfdGetfd = @convention(c) (Int32, Int32, UInt32) -> Int32
    guard let open = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_open"),
          let getfd = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pidfd_getfd") else { return nil }
    let pidfd = unsafeBitCast(open, to: PidfdOpen.self)(pid, 0)
    guard pidfd >= 0 else { return nil }
    defer { close(pidfd) }
    let duplicate = unsafeBitCast(getfd, to: PidfdGetfd.self)(pidfd, number, 0)
    return duplicate >= 0 ? duplicate : nil
}

/// What the tests of voiceboxd on a speech-dispatcher of their own share.
extension XCTestCase {
    /// The one place a test starts a speech-dispatcher of its own (`start: false`: made, not yet
    /// started). It is stopped, and thawed if frozen, when the test ends; since tear-down blocks run
    /// last-registered first, a voiceboxd started on it afterwards stops before it does.
    func ownSpeechd(config: String, start: Bool = true) async throws -> PrivateSpeechd {
        let speechd = try PrivateSpeechd(config: config)
        addTeardownBlock { speechd.stopEverything() }
        if start { try await speechd.start() }
        return speechd
    }

    func ownSpeechd(_ stack: Stack, start: Bool = true) async throws -> PrivateSpeechd {
        try await ownSpeechd(config: stack.speechdConfig, start: start)
    }

    /// A speech-dispatcher of this test's own, to be frozen or killed the way any other program
    /// could, and a voiceboxd on it with `arguments`. `autospawn` is on as on a desktop when asked;
    /// the server's socket is not libspeechd's autospawn socket, so one that dies is started again
    /// only with its own command line. At teardown the server is thawed first (voiceboxd says
    /// goodbye to it), then the service stops, then the server.
    func serviceOnItsOwnSpeechd(_ stack: Stack, _ arguments: [String] = [], autospawn: Bool = false,
                                stderrFD: Int32? = nil) async throws -> (PrivateSpeechd, ServiceHarness) {
        let speechd = try await ownSpeechd(stack)
        let service = try await startService(on: stack, speechdAddress: speechd.address, autospawn: autospawn,
                                             extraArguments: arguments, stderrFD: stderrFD)
        addTeardownBlock { speechd.thaw() }
        return (speechd, service)
    }

    /// Speaks "ready" once, and waits until it has been spoken: the server is idle (its output
    /// module started). Called once, not until it works: a voiceboxd whose speech-dispatcher is up
    /// holds a first Speak until its first connection is made (SpeechdCore's `.starting`).
    func waitUntilSpoken(_ service: ServiceHarness) async throws {
        let ready = try await service.speak("ready")
        let end = try await service.waitForFinish(ready, timeout: .seconds(30))
        XCTAssertEqual(end, "done")
    }

    /// Waits until the sink has been silent for half a second (what was playing has drained).
    func waitForSilence(_ ears: MonitorRecorder) async throws {
        try await waitUntil("the sink to fall silent", timeout: .seconds(10)) {
            ears.seconds > 0.5 && ears.rms(from: ears.seconds - 0.5) < 50
        }
    }
}
