import Foundation
import Synchronization
import VoiceboxBus
@testable import VoiceboxDaemon
import VoiceboxContract
import XCTest

/// One voiceboxd on the test bus and a client connection that records its signals.
final class ServiceHarness: Sendable {
    static let name = "org.voicebox.Speech1"
    static let path = "/org/voicebox/Speech1"
    static let interface = "org.voicebox.Speech1"

    let stack: Stack
    let daemon: Subprocess
    /// The speech-dispatcher it speaks to (nil: found from the environment).
    let speechdAddress: String?
    let client: BusConnection
    /// The service through its declarations.
    var proxy: BusProxy { Speech1.proxy(client) }
    private let received = Shared<[Signal]>([])
    /// Set by the first `stop`: a later one (an explicit stop, then the test's tear-down) does nothing.
    private let stopped = Atomic<Bool>(false)

    /// Starts voiceboxd (never autospawning speech-dispatcher) and waits for its name.
    /// `environment`: variables to set or replace in the daemon's (e.g. PULSE_SERVER).
    /// `stderrFD`: where the daemon's log goes (nil: the test's own stderr).
    /// `addressFromEnvironment`: give no --speechd-address, so voiceboxd finds speech-dispatcher the
    /// way every client does ($SPEECHD_ADDRESS, then the runtime directory).
    /// `autospawn`: let voiceboxd start speech-dispatcher, as it does on a desktop.
    init(stack: Stack, speechdAddress: String? = nil, addressFromEnvironment: Bool = false, autospawn: Bool = false,
         extraArguments: [String] = [], environment: [String: String] = [:], stderrFD: Int32? = nil,
         waitForName: Bool = true) async throws {
        self.stack = stack
        let inherited = FileManager.default.fileExists(atPath: Self.journalPath)
        self.speechdAddress = addressFromEnvironment ? nil : speechdAddress ?? stack.speechdAddress
        let address = self.speechdAddress.map { ["--speechd-address", $0] } ?? []
        // The stack's keep-alive streams and the players that feed its fake microphone have role
        // "test": an audio interruption must leave them alone, or listening would silence the microphone.
        // Start-up's spare output modules stay until a test is done with them (their standard,
        // module-spare-unused 15 s, would let them go in the middle of tests that count
        // voiceboxd's descriptors or modules after `waitUntilSettled`), unless the test says.
        let spares = extraArguments.contains { $0.hasPrefix("module-spare-unused=") } ? [] : ["--bound", "module-spare-unused=3600"]
        daemon = try Subprocess(stack.daemonPath, (autospawn ? [] : ["--no-autospawn"]) + ["--spare-role", "test"] + address + spares
                                + extraArguments,
                                environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
                                stderrFD: stderrFD)
        client = try BusConnection(address: stack.busAddress)
        let received = received
        _ = try await client.subscribe(SignalFilter(interface: Self.interface)) { signal in
            received.withLock { $0.append(signal) }
        }
        if waitForName {
            try await waitForOwner()
            if inherited { await forgetInheritedRecovery() }
        }
    }

    /// A journal an earlier voiceboxd left (a test that stops one with SIGTERM fails for it: see
    /// `stop`) is undone by this one as it starts, with the `ended` of an interruption this test
    /// never began (CI once saw it so): waited for (bounded) and forgotten, so that a test sees
    /// only its own signals.
    private func forgetInheritedRecovery() async {
        let isEnded = { (signal: Signal) in signal.member == "AudioInterruption" && signal.arguments.first?.string == "ended" }
        try? await waitUntil("the inherited journal's AudioInterruption ended", timeout: .seconds(5)) { self.signals.contains(where: isEnded) }
        received.withLock { received in
            if let ended = received.firstIndex(where: isEnded) { received.removeFirst(ended + 1) }
        }
    }

    /// Waits until the name belongs to this harness's voiceboxd (not one a previous test left behind).
    func waitForOwner() async throws {
        let client = client, pid = UInt32(daemon.pid), daemon = daemon
        try await waitUntil("voiceboxd to own its name") {
            let reply = try? await client.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                               interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID",
                                               arguments: [.string(Self.name)])
            return reply?.first?.uint32 == pid || daemon.poll() != nil
        }
        if let status = daemon.poll() {
            struct Exited: Error, CustomStringConvertible { var description: String }
            throw Exited(description: "voiceboxd exited with status \(status) before owning its name")
        }
    }

    /// Stops voiceboxd with SIGTERM. Returns the interruption journal it left behind if it was
    /// running until then: a trace (what it changed of others' audio, or of what the server
    /// remembers, not yet undone) that only the next voiceboxd would clear.
    /// A voiceboxd that had died already (a test killed it): see `cancelSpeechLeftBehind`.
    @discardableResult
    func stop() async -> String? {
        guard !stopped.exchange(true, ordering: .relaxed) else { return nil }
        let wasRunning = daemon.poll() == nil
        daemon.signal(SIGTERM)
        await daemon.wait()
        await client.close()
        guard wasRunning else {
            cancelSpeechLeftBehind()
            return nil
        }
        return try? String(contentsOfFile: Self.journalPath, encoding: .utf8)
    }

    /// A voiceboxd that died (a test killed it) could not stop what it had handed speech-dispatcher,
    /// which speaks a dead client's text to its end: that speech is cancelled, or the next test's
    /// speech would queue behind it (seconds of a long text). `stop` does it for a dead voiceboxd.
    func cancelSpeechLeftBehind() {
        if let speechdAddress, let cleaner = try? RawSSIPClient(address: speechdAddress, name: "cleaner") {
            _ = try? cleaner.command("CANCEL all")
        }
    }

    /// `stop`, failing the test if voiceboxd left an interruption journal behind.
    func stopLeavingNoJournal(file: StaticString = #filePath, line: UInt = #line) async {
        if let left = await stop() {
            XCTFail("voiceboxd stopped with SIGTERM left an interruption journal for the next one: \(left)", file: file, line: line)
        }
    }

    /// Where voiceboxd keeps its interruption journal: the stack's runtime directory is this process's too.
    static var journalPath: String { FileJournalStore.default().path }

    // MARK: Calls

    func call(_ member: String, _ arguments: [DBusValue] = [], timeout: Duration = .seconds(30)) async throws -> [DBusValue] {
        try await client.call(destination: Self.name, path: Self.path, interface: Self.interface, member: member,
                              arguments: arguments, timeout: timeout)
    }

    func speak(_ text: String, _ options: [String: DBusValue] = [:]) async throws -> UInt64 {
        try await proxy.call(Speech1.speak, text, VarDict(options))
    }

    func property(_ name: String) async throws -> DBusValue? {
        try await client.call(destination: Self.name, path: Self.path, interface: "org.freedesktop.DBus.Properties",
                              member: "Get", arguments: [.string(Self.interface), .string(name)]).first?.unwrapped
    }

    /// The D-Bus error name a call fails with, or nil if it succeeded.
    func errorName(_ member: String, _ arguments: [DBusValue]) async -> String? {
        do {
            _ = try await call(member, arguments)
            return nil
        } catch let error as DBusError {
            return error.name
        } catch {
            return "\(error)"
        }
    }

    // MARK: Signals

    var signals: [Signal] { received.withLock { $0 } }

    /// Forgets the signals received so far: a test that shares this voiceboxd with the tests of
    /// its class before it sees only its own.
    func forgetSignals() { received.withLock { $0.removeAll() } }

    /// Signals about utterance `id`, as "Member" or "Member:arg".
    func events(of id: UInt64) -> [String] {
        signals.filter { $0.arguments.first?.uint64 == id }.map { signal in
            signal.arguments.count > 1 ? "\(signal.member):\(signal.arguments[1].string ?? "")" : signal.member
        }
    }

    func waitForFinish(_ id: UInt64, timeout: Duration = .seconds(20)) async throws -> String {
        try await waitUntil("SpeechFinished(\(id))", timeout: timeout) {
            self.events(of: id).contains { $0.hasPrefix("SpeechFinished") }
        }
        return events(of: id).first { $0.hasPrefix("SpeechFinished") }!.replacingOccurrences(of: "SpeechFinished:", with: "")
    }
}

extension ServiceHarness {
    static func stop(on connection: BusConnection) async throws -> [DBusValue] {
        try await connection.call(destination: name, path: path, interface: interface, member: "StopRecognition")
    }
}
