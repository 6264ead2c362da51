import Foundation
import VoiceboxBus
import VoiceboxContract
import XCTest

/// IBus's panel extension name, as the tests see it on the session's IBus bus: Voicebox types by
/// taking it (from ibus-extension-gtk3, the emoji picker, which lets it go and waits in the bus's
/// queue), and must leave it with its owner again, whatever happens.
extension GnomeSession {
    static let extensionName = "org.freedesktop.IBus.Panel.Extension.Emoji"

    /// A connection of the test's own to the session's IBus bus (the address `ibus address` names).
    func ibusBus() throws -> BusConnection {
        let address = try run(["ibus", "address"]).output.trimmingCharacters(in: .whitespacesAndNewlines)
        let bus = try BusConnection(address: address)
        bus.boundBusDaemonCalls(.seconds(5))
        return bus
    }

    /// IBus's emoji typing (Super+period, GNOME's default) answers: it shows its "e" in the entry,
    /// which Escape takes away. It is the panel extension's: it works only while the emoji picker
    /// holds the name and has registered its keys again (just after it has the name back, the
    /// keys may still type a plain "."): each try starts from an empty entry, and the entry is
    /// left empty.
    func waitUntilEmojiTypingWorks() async throws {
        try await waitUntil("IBus's emoji typing to show its \u{201C}e\u{201D}", timeout: .seconds(20)) {
            try? await self.window.clear()
            try? await self.press(0x2E, holding: 0xFFEB)  // Super_L + period
            for _ in 0..<20 where self.window.preedit != "e" { try? await Task.sleep(for: .milliseconds(100)) }
            if self.window.preedit == "e" { return true }
            try? await self.press([0xFF1B])  // Escape, in case it answered late
            return false
        }
        try await press([0xFF1B])  // Escape
        try await waitUntil("the emoji typing to end", timeout: .seconds(10)) { self.window.preedit == "" }
        try await window.clear()
    }

    /// The unique name that owns the panel extension's name now; nil when nobody does.
    static func extensionOwner(_ bus: BusConnection) async -> String? {
        let reply = try? await bus.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                        member: "GetNameOwner", arguments: [.string(extensionName)], timeout: .seconds(5))
        return reply?.first?.string
    }
}

/// Holds the panel extension's name without letting it be taken, as an extension that does not
/// allow replacement would: Voicebox then types with an engine of its own (IBusTyper's other way).
final class ExtensionNameHolder: Sendable {
    private let bus: BusConnection

    init(_ gnome: GnomeSession) async throws {
        bus = try gnome.ibusBus()
        guard try await bus.requestName(GnomeSession.extensionName, replacing: true) == .primaryOwner else {
            throw ProgramError(description: "could not take IBus's panel extension name")
        }
    }

    /// Lets it go (the emoji picker, queued, has it back).
    func release() async {
        try? await bus.releaseName(GnomeSession.extensionName)
        await bus.close()
    }
}

extension XCTestCase {
    /// The class's GNOME session, ready for a test: the entry empty and focused, IBus's engine
    /// xkb:us::eng (asserted).
    func readyGnomeSession(_ fixture: ClassFixture<GnomeSession>) async throws -> (Stack, GnomeSession) {
        let stack = try Stack.require()
        let gnome = try await fixture.session()
        try await gnome.prepareForTest()
        XCTAssertEqual(try gnome.ibusEngine(), "xkb:us::eng")
        return (stack, gnome)
    }

    /// `voicebox insert ARGUMENTS` run in the session with only its environment, to its end
    /// (at most 60 s): its exit status, and the run (its standard output and error).
    func insert(in gnome: GnomeSession, _ stack: Stack, _ arguments: [String]) async throws -> (Int32?, ClientRun) {
        let client = try stopsAtEnd(ClientRun(stack, ["insert"] + arguments, environment: gnome.environment))
        return (await client.finish(timeout: .seconds(60)), client)
    }
}

extension XCTestCase {
    /// Two `voicebox insert` runs that overlap and share no insertion lock file: the first with the
    /// session's environment, its window frozen for a second, the second started meanwhile without
    /// XDG_RUNTIME_DIR (as from cron or ssh). Returns both texts, both runs and their exit statuses.
    func overlappingInsertions(in gnome: GnomeSession, _ stack: Stack) async throws
        -> (texts: [String], runs: [ClientRun], statuses: [Int32?]) {
        // Each of two pieces; together under the 4,000 bytes past which a GTK field on Wayland stops
        // reporting its text (which the engine's way needs).
        let texts = ["erste " + String(repeating: "Grüße — 東京 ✓ ", count: 90), "zweite " + String(repeating: "naïve café ", count: 100)]
        var elsewhere = gnome.environment
        elsewhere["XDG_RUNTIME_DIR"] = nil
        gnome.window.pause()
        let first = try stopsAtEnd(ClientRun(stack, ["insert", "--verbose", texts[0]], environment: gnome.environment))
        try await Task.sleep(for: .milliseconds(500))
        let second = try stopsAtEnd(ClientRun(stack, ["insert", "--verbose", texts[1]], environment: elsewhere))
        try await Task.sleep(for: .milliseconds(500))
        gnome.window.resume()
        var statuses: [Int32?] = []
        for run in [first, second] { statuses.append(await run.finish(timeout: .seconds(60))) }
        return (texts, [first, second], statuses)
    }
}
