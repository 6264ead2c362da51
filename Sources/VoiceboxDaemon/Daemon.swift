import Dispatch
import Glibc
import Synchronization
import VoiceboxBus
import VoiceboxContract
import VoiceboxCore
import VoiceboxModels
import VoiceboxStreams
import VoiceboxSpeechd
import VoiceboxWorkers

/// Wires the real parts together and serves until SIGTERM, SIGINT or the loss of the bus.
public enum Daemon {
    /// Returns the process's exit status. `terminations` carries the numbers of SIGTERM and SIGINT.
    public static func run(_ options: DaemonOptions, terminations: AsyncStream<Int32>) async -> Int32 {
        // Whatever ends the service first (a signal, or the bus going away) gives the status.
        let (endings, end) = AsyncStream<Int32>.makeStream()
        let stopRequested = StopRequest()
        Task {
            for await number in terminations {
                log("signal \(number): exiting")
                stopRequested.set()
                end.yield(0)
            }
        }
        guard let connection = connect(options) else { return 1 }
        let parts: DaemonParts
        do {
            parts = try DaemonParts(connection: connection, options: options)
        } catch {
            log("cannot export \(Speech1.objectPath): \(error.message)")
            return 1
        }
        await parts.start()
        // Export and publish first, then take the name: a caller activated by the name finds it all.
        let provider = await startProvider(connection, speech: parts.speech, rendering: parts.rendering, bus: parts.object)
        // Stopped while starting: never publish an owner that is about to go.
        if stopRequested.isSet {
            await connection.close()
            parts.synthesizer.shutdown()
            await parts.audio.shutdown()
            return 0
        }
        if let failed = await takeName(on: connection, options) {
            // The audio helper is told to go (it exits 0, its server connections closed), not killed.
            parts.synthesizer.shutdown()
            await parts.audio.shutdown()
            return failed
        }
        log("serving \(Speech1.busName) as \(connection.uniqueName)")
        let providerWait = options.bounds[.providerVoices]
        let providerName = Task { await claimProviderName(provider, waitingAtMost: providerWait) }
        // Only now: undoing a crashed interruption announces its `ended`, which a monitor watching
        // the name must see (and a voiceboxd that found the name taken must leave to its owner).
        Task { await parts.session.run() }

        connection.onDisconnect {
            log("lost the bus; exiting")
            end.yield(1)
        }
        Task { await parts.speech.run() }
        parts.object.serve(parts.speech, recognition: parts.recognition)
        var status: Int32 = 1
        for await ending in endings {
            status = ending
            break
        }
        // Others get their audio back and every `ended` goes out while the name is still ours, so
        // that a monitor watching the name sees it.
        await parts.session.finish()
        providerName.cancel()
        await provider?.0.releaseName()
        try? await connection.releaseName(Speech1.busName)
        await connection.close()
        parts.synthesizer.shutdown()
        await parts.audio.shutdown()
        return status
    }

    /// The session bus (or `--bus-address`), its calls to the bus daemon bounded; nil, logged, if
    /// it cannot be reached.
    private static func connect(_ options: DaemonOptions) -> BusConnection? {
        let connection: BusConnection
        do throws(DBusError) {
            if let address = options.busAddress {
                connection = try BusConnection(address: address)
            } else {
                connection = try BusConnection.session()
            }
        } catch {
            log("cannot connect to the bus: \(error.message)")
            return nil
        }
        // Once the calls stop, what they freed goes back to the system instead of staying resident.
        // Soon (memory-trim, 0.5 s), so that it is over before anyone measures an idle daemon's CPU
        // (bench/ and the tests start 1 s or more after their last call).
        connection.boundBusDaemonCalls(options.bounds[.busCall])
        connection.whenQuiet(after: options.bounds[.memoryTrim]) { MallocArenas.returnFreeMemory() }
        return connection
    }

    /// Takes org.voicebox.Speech1: nil once it is ours, else the exit status (2: another owns it).
    private static func takeName(on connection: BusConnection, _ options: DaemonOptions) async -> Int32? {
        do {
            switch try await connection.requestName(Speech1.busName) {
            case .primaryOwner, .alreadyOwner:
                return nil
            case .taken:
                let owner = (try? await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                        interface: "org.freedesktop.DBus", member: "GetNameOwner",
                                                        arguments: [.string(Speech1.busName)], timeout: options.bounds[.busCall]))?
                    .first?.string ?? "another process"
                log("\(Speech1.busName) is already owned by \(owner): is another voiceboxd running?")
                return 2
            }
        } catch {
            log("cannot own \(Speech1.busName): \(error.message)")
            return 1
        }
    }

    /// One line on standard error (the journal, under systemd), prefixed with our name.
    public static func log(_ message: String) {
        let line = Array(("voiceboxd: " + message + "\n").utf8)
        _ = line.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}

/// Set once TERM or INT has come; read by start-up, which must not take the name then.
private final class StopRequest: Sendable {
    private let flag = Atomic(false)
    var isSet: Bool { flag.load(ordering: .acquiring) }
    func set() { flag.store(true, ordering: .releasing) }
}
