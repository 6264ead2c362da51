import Foundation
import VoiceboxThreads
import XCTest

/// The real stack that scripts/test brought up (scripts/stack writes these variables).
struct Stack {
    let busAddress: String
    let speechdAddress: String
    let sink: String
    let micSink: String
    let speechdConfig: String
    let binDirectory: String

    static func require() throws -> Stack {
        let env = ProcessInfo.processInfo.environment
        guard let bus = env["DBUS_SESSION_BUS_ADDRESS"], let speechd = env["SPEECHD_ADDRESS"],
              let sink = env["VOICEBOX_TEST_SINK"], let config = env["VOICEBOX_SPEECHD_CONFIG"] else {
            throw XCTSkip("no test stack: run the end-to-end tests through scripts/test")
        }
        let bin = Checkout.buildDirectory
        return Stack(busAddress: bus, speechdAddress: speechd, sink: sink, micSink: env["VOICEBOX_TEST_MIC_SINK"] ?? "voicebox_mic",
                     speechdConfig: config, binDirectory: bin)
    }

    /// The pid of one of the stack's processes (the stack's HOME is DIR/home).
    func pid(of name: String) -> pid_t? {
        guard let home = ProcessInfo.processInfo.environment["HOME"] else { return nil }
        return Self.pid(of: name, in: URL(fileURLWithPath: home).deletingLastPathComponent().path)
    }

    /// The pid scripts/stack recorded for `name` (dbus, pulseaudio, wireplumber, speechd ...) in DIR/pids.
    static func pid(of name: String, in directory: String) -> pid_t? {
        (try? String(contentsOfFile: "\(directory)/pids/\(name).pid", encoding: .utf8))
            .flatMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
    }

    var daemonPath: String { binDirectory + "/voiceboxd" }
    var clientPath: String { binDirectory + "/voicebox" }
}

/// Polls `condition` every 10 ms until it holds; throws (naming `what`) if it has not after
/// `timeout`, which is a give-up bound for something that should happen, not a measure of speed.
func waitUntil(_ what: String = "the condition", timeout: Duration = .seconds(10), _ condition: () async -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while !(await condition()) {
        guard ContinuousClock.now < deadline else {
            struct Timeout: Error, CustomStringConvertible { var description: String }
            throw Timeout(description: "timed out after \(timeout) waiting for \(what)")
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// A value shared between a callback thread and the test.
final class Shared<Value: Sendable>: Sendable {
    private let mutex: Locked<Value>
    init(_ value: Value) { mutex = Locked(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
    var value: Value { mutex.withLock { $0 } }
}
