import Foundation
@testable import TestSupport
import VoiceboxCore
import VoiceboxLock
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
final class LogLines: Sendable {
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
