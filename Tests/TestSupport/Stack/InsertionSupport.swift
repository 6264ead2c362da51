import Foundation
import Glibc
import VoiceboxBus
import VoiceboxContract
import XCTest

/// Keeps every core busy (a shell spinning per core) while a test runs, as other work on a
/// loaded desktop would: typing must stay exact under it.
final class CPUBurner: Sendable {
    private let spinners: [Subprocess]

    init() throws {
        spinners = try (0..<max(2, ProcessInfo.processInfo.activeProcessorCount)).map { _ in
            try Subprocess("/bin/sh", ["-c", "while :; do :; done"])
        }
    }

    func stop() async {
        for spinner in spinners { spinner.signal(SIGKILL) }
        for spinner in spinners { _ = await spinner.wait(timeout: .seconds(5)) }
    }
}

/// Types each text `rounds` times into a window and counts what arrived exactly.
enum TypingRounds {
    struct Report: CustomStringConvertible {
        var rounds = 0
        var exact = 0
        var misses: [String] = []
        /// Characters typed and the seconds from starting voicebox to the last one arriving, by kind.
        var asciiCharacters = 0, asciiSeconds = 0.0
        var otherCharacters = 0, otherSeconds = 0.0

        var description: String {
            func rate(_ count: Int, _ seconds: Double) -> String { seconds > 0 ? String(format: "%.1f", Double(count) / seconds) : "-" }
            return "\(exact) of \(rounds) exact; \(rate(otherCharacters, otherSeconds)) characters/s for non-ASCII text"
                + (asciiCharacters > 0 ? ", \(rate(asciiCharacters, asciiSeconds)) for ASCII" : "")
                + " (from starting voicebox to the last character in the window)"
        }
    }

    /// `start` starts one insertion of the text; `received` is what the window holds, `clear` empties it.
    static func run(texts: [String], rounds: Int, received: @Sendable () -> String, clear: () -> Void,
                    start: (String) throws -> ClientRun) async throws -> Report {
        var report = Report()
        for _ in 0..<rounds {
            for text in texts {
                clear()
                let began = ContinuousClock.now
                let client = try start(text)
                var arrived: ContinuousClock.Instant?
                let deadline = began + .seconds(30)
                while ContinuousClock.now < deadline {
                    if received() == text {
                        arrived = ContinuousClock.now
                        break
                    }
                    if client.process.poll() != nil, received().count >= text.count { break }
                    try await Task.sleep(for: .milliseconds(5))
                }
                let status = await client.finish(timeout: .seconds(30))
                report.rounds += 1
                if let arrived, status == 0 {
                    report.exact += 1
                    let seconds = Double((arrived - began).components.attoseconds) / 1e18 + Double((arrived - began).components.seconds)
                    if text.unicodeScalars.allSatisfy(\.isASCII) {
                        report.asciiCharacters += text.count
                        report.asciiSeconds += seconds
                    } else {
                        report.otherCharacters += text.count
                        report.otherSeconds += seconds
                    }
                } else {
                    report.misses.append("\(text.debugDescription) arrived as \(received().debugDescription) (exit \(String(describing: status)): \(client.stderr))")
                }
            }
        }
        return report
    }
}

/// A notification server (org.freedesktop.Notifications) on the test bus that remembers what it
/// was asked to show.
final class FakeNotifications: Sendable {
    actor Shown {
        var notifications: [(summary: String, body: String)] = []
        func add(_ summary: String, _ body: String) -> UInt32 {
            notifications.append((summary, body))
            return UInt32(notifications.count)
        }
    }

    private let server: BusConnection
    private let store = Shown()

    init(_ stack: Stack) async throws {
        server = try BusConnection(address: stack.busAddress)
        let store = store
        _ = try server.export(path: DesktopNotifications.objectPath, interface: DesktopNotifications.interface, handlers: [
            DesktopNotifications.notify.handler { _, _, _, _, summary, body, _, _, _ in await store.add(summary, body) },
            DesktopNotifications.closeNotification.handler { _, _ in NoReply() },
        ])
        let owned = try await server.requestName(DesktopNotifications.busName)
        guard owned == .primaryOwner else { throw ProgramError(description: "another notification server is on the test bus") }
    }

    var shown: [(summary: String, body: String)] {
        get async { await store.notifications }
    }

    func close() async { await server.close() }
}
