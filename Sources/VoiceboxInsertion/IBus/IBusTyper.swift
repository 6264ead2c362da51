import VoiceboxBus

/// GNOME and KDE on Wayland give programs no virtual keyboard, but run an IBus daemon (GNOME for
/// every session): a commit reaches the focused field as typed text, any Unicode, whatever the
/// keyboard layout, with no root set-up. First as IBus's panel extension (IBusExtensionCommit),
/// which touches nothing of the user's. Where that name cannot be taken, with an engine of our
/// own for the length of one insertion: Voicebox registers it (RegisterComponent), switches the
/// focused field to it (SetGlobalEngine), waits for its FocusIn, commits the text (CommitText),
/// confirms it from the field's own report of its text (SurroundingText), and puts the user's
/// engine back, whatever happened midway (`restore`).
enum IBusTyper {
    /// From SetGlobalEngine to the engine's FocusIn.
    static let focusWait: Duration = .seconds(5)
    /// For the field to report its text after the commit (as a loaded window answers a paste late).
    static let confirmWait: Duration = .seconds(3)
    /// For the daemon to drop our component once our engine's connection closed.
    static let goneWait: Duration = .seconds(5)
    /// UTF-8 bytes per CommitText: gnome-shell passes a commit on in one Wayland message, and
    /// libwayland refuses messages over 4 KiB (mutter then drops the window's connection). Counted
    /// in bytes, not characters: one emoji sequence is up to 25 bytes, an NFD syllable 9.
    static let pieceBytes = 2_000

    /// Types `text` into the field that has the focus, through `daemon` (which the caller closes).
    /// `framed`: the session is Wayland's, where commits reach a window one per frame. `watch`: the
    /// compositions seen since dictation began; on the engine's way, one in progress that the
    /// switch would drop holds the typing back (CompositionWatch). `report` hears when the
    /// engine's way is taken, and why (`--verbose`).
    static func type(_ text: String, daemon: IBusDaemon, framed: Bool, watch: CompositionWatch? = nil,
                     report: (String) -> Void = { _ in }) async throws(InsertionError) {
        try await takeTurn(daemon)
        let typed: Result<Void, InsertionError>
        do {
            typed = .success(try await typeInTurn(text, daemon: daemon, framed: framed, watch: watch, report: report))
        } catch {
            typed = .failure(error)
        }
        try? await daemon.connection.releaseName(turnName)
        try typed.get()
    }

    /// Owned on IBus's bus by the voicebox that is typing through it.
    static let turnName = "org.voicebox.IBusTyping"

    /// One insertion through IBus's daemon at a time, whoever runs it: two at once interleave their
    /// pieces, and on the engine's way each takes the other's engine for the user's (and may leave
    /// none set). The session's insertion lock (InsertionGuard) is a file in `$XDG_RUNTIME_DIR`,
    /// which a `voicebox` started from cron or ssh may not share; IBus's bus is the same for all.
    /// Waited for as that lock is (`InsertionGuard.lockWait`).
    private static func takeTurn(_ daemon: IBusDaemon) async throws(InsertionError) {
        let deadline = ContinuousClock.now + InsertionGuard.lockWait
        while true {
            let taken: BusConnection.NameRequestResult
            do {
                taken = try await daemon.connection.requestName(turnName)
            } catch {
                throw .failed("IBus did not answer for \(turnName): \(error.message)")
            }
            if taken != .taken { return }
            guard ContinuousClock.now < deadline else {
                throw .failed("another insertion has typed through IBus for more than \(InsertionGuard.lockWait.components.seconds) s")
            }
            try InsertionGuard.checkInterrupted()
            try? await Task.sleep(for: InsertionGuard.lockPoll)
        }
    }

    private static func typeInTurn(_ text: String, daemon: IBusDaemon, framed: Bool, watch: CompositionWatch?,
                                   report: (String) -> Void) async throws(InsertionError) {
        // As the panel extension where the daemon lets us: the user's engine is not touched at all.
        guard case .unavailable(let why) = try await IBusExtensionCommit.type(text, daemon: daemon, framed: framed) else { return }
        report("IBus's panel extension cannot be taken (\(why)): an engine of Voicebox's types instead, then your input method is put back")
        try await watch?.waitUntilNoFragileComposition(daemon)
        let previous = try await daemon.globalEngine()
        try InsertionGuard.checkInterrupted()
        let host: IBusEngineHost
        do {
            // (libdbus waits at most 25 s for the bus's Hello; the daemon answered a moment ago.)
            host = try IBusEngineHost(address: daemon.address)
        } catch {
            throw .failed("IBus's bus refused a second connection: \(error.message)")
        }
        // From the registration on, the daemon may drop the user's engine (see `restore`): it is
        // put back whatever happens in between, by the guardian if this process is killed.
        let guardian = previous.flatMap {
            IBusGuardian(previous: $0, address: daemon.address, engineConnection: host.connection.uniqueName)
        }
        let typed: InsertionError?
        do {
            try await register(host)
            try await commit(text, host: host, daemon: daemon)
            typed = nil
        } catch {
            typed = error
        }
        let restored = await restore(previous, host: host, daemon: daemon)
        guardian?.release()
        if let typed {
            if let restored { throw .failed("\(typed.description); and \(restored.description)") }
            throw typed
        }
        if let restored { throw restored }
    }

    private static func register(_ host: IBusEngineHost) async throws(InsertionError) {
        do {
            try await host.register(timeout: IBusDaemon.callTimeout)
        } catch {
            throw .failed("IBus did not take Voicebox's engine: \(error.message)")
        }
    }

    /// Puts the user's engine back: (1) switch to it while our component is still registered;
    /// (2) close our engine's connection and wait until the daemon has dropped the component (its
    /// name leaves the bus); (3) set the user's engine again if the daemon changed it: ibus 1.5.27
    /// (and upstream today), dropping a run-time component, looks for the previous engine among
    /// run-time engines only, misses the user's, and sets no engine at all. Returns what failed.
    static func restore(_ previous: String?, host: IBusEngineHost, daemon: IBusDaemon) async -> InsertionError? {
        var problems: [String] = []
        if let previous, (try? await daemon.globalEngine()) != previous {
            do { try await daemon.setGlobalEngine(previous) } catch { problems.append(error.description) }
        }
        let name = host.connection.uniqueName
        await host.close()
        if !(await daemon.waitUntilGone(name, timeout: goneWait)) {
            problems.append("IBus still had Voicebox's engine after \(goneWait.components.seconds) s")
        }
        if let previous {
            do {
                if try await daemon.globalEngine() != previous { try await daemon.setGlobalEngine(previous) }
                let now = try await daemon.globalEngine()
                if now != previous { problems.append("IBus's engine is \(now ?? "none"), not \(previous)") }
            } catch {
                problems.append(error.description)
            }
        }
        guard !problems.isEmpty else { return nil }
        return .failed("the input method could not be set back to \(previous ?? "none") (\(problems.joined(separator: "; "))): "
                       + "choose it again with the input-source switcher")
    }
}
