import VoiceboxBus
import VoiceboxThreads

/// Committing, piece by piece, each shown by the field before the next is sent. mutter keeps one
/// pending commit per text-input client until it sends the frame's `done`: a second commit in the
/// same frame replaces the first (measured on GNOME 43: the middle 500 characters of 1,380 lost;
/// and ibus-hangul's syllable, committed by the daemon at the switch, replaced by ours).
extension IBusTyper {
    /// For the field to show the user's composition the daemon committed at the switch.
    static let settleWait: Duration = .seconds(1)
    /// Between two pieces for a window that reports nothing (its arrival is unconfirmed anyway).
    static let unreportedSpacing: Duration = .milliseconds(200)

    /// Switches to our engine, then commits `text` once it has the focus; throws `.unconfirmed`
    /// when the field does not show all of it.
    static func commit(_ text: String, host: IBusEngineHost, daemon: IBusDaemon) async throws(InsertionError) {
        let finishedComposition = try await switchToOurEngine(host: host, daemon: daemon)
        // "fake" is the daemon's own context, focused when no application's field is.
        if host.snapshot.client == "fake" { throw .unconfirmed("no input field has the keyboard focus") }
        host.requireSurroundingText()
        // SetCapabilities follows FocusIn in the same breath, but may still be on its way here.
        _ = try await IBusWait.until(confirmWait) { host.snapshot.capabilities != nil }
        let reports = host.snapshot.capabilities?.contains(.surroundingText) ?? false
        // The composition the daemon committed must be shown before our first piece goes, or the
        // piece, landing in the same frame, replaces it; and it is part of what the field must show
        // before its cursor, so that a composition lost anyway leaves the text unconfirmed (kept).
        var sent = ""
        switch finishedComposition {
        case .none: break
        case .committed(let composition) where reports:
            let shown = try await IBusWait.until(settleWait) {
                host.snapshot.surroundings.contains { SurroundingText.confirms($0, committed: composition, strictly: true) }
            }
            guard shown else {
                throw .unconfirmed("the field did not show your input method's composition \u{201C}\(composition)\u{201D} "
                                   + "that the switch to Voicebox's engine committed; the text was not typed")
            }
        case .committed, .unknown:
            try? await Task.sleep(for: unreportedSpacing)
        }
        var rest = Substring.UnicodeScalarView(text.unicodeScalars)
        var unconfirmed: InsertionError?
        while !rest.isEmpty {
            try InsertionGuard.checkInterrupted()
            guard host.snapshot.focused else {
                throw .unconfirmed("the field lost the keyboard focus while the text was committed through IBus")
            }
            let piece = String(Substring(nextPiece(&rest)))
            let before = host.snapshot.surroundings.count
            guard host.commit(piece) else { throw .failed("IBus never created Voicebox's engine") }
            sent += piece
            if unconfirmed == nil {
                unconfirmed = try await waitUntilShown(sent, host: host, after: before, reports: reports)
            } else if !rest.isEmpty {
                try? await Task.sleep(for: unreportedSpacing)
            }
        }
        if let unconfirmed { throw unconfirmed }
    }

    /// Takes the next piece to commit off `rest`: at most `pieceBytes` of UTF-8, ended between two
    /// characters (grapheme clusters) where one fits, else between two scalars (one character may
    /// be longer than a piece: a pile of combining marks).
    static func nextPiece(_ rest: inout Substring.UnicodeScalarView) -> Substring.UnicodeScalarView {
        var bytes = 0, lastCharacterEnd = rest.startIndex
        let characters = Substring(rest)
        var index = characters.startIndex
        while index < characters.endIndex {
            let next = characters.index(after: index)
            let size = characters[index..<next].utf8.count
            if bytes + size > pieceBytes { break }
            bytes += size
            index = next
            lastCharacterEnd = next
        }
        var end = lastCharacterEnd
        if end == rest.startIndex {  // the first character alone is too long: cut it between scalars
            bytes = 0
            while end < rest.endIndex, bytes + UTF8.width(rest[end]) <= pieceBytes {
                bytes += UTF8.width(rest[end])
                end = rest.index(after: end)
            }
        }
        let piece = rest[..<end]
        rest = rest[end...]
        return piece
    }

    /// What the daemon committed of the user's engine's composition as it switched.
    enum FinishedComposition {
        case none
        /// IBus's PREEDIT_COMMIT: the composition, committed to the field just before our engine.
        case committed(String)
        /// The daemon's commits could not be watched.
        case unknown
    }

    /// Switches, and says whether the daemon committed a composition of the user's engine as it
    /// did (PREEDIT_COMMIT): that CommitText to the client comes on the daemon's connection before
    /// the answer to SetGlobalEngine.
    private static func switchToOurEngine(host: IBusEngineHost, daemon: IBusDaemon) async throws(InsertionError) -> FinishedComposition {
        let committed = Locked<[String]>([])
        let filter = SignalFilter(sender: IBusInterfaces.busName, interface: "org.freedesktop.IBus.InputContext", member: "CommitText")
        let token = try? await daemon.connection.subscribe(filter) { signal in
            let text = signal.arguments.first.flatMap(IBusValues.string(ofText:)) ?? ""
            committed.withLock { $0.append(text) }
        }
        defer { if let token { daemon.connection.unsubscribe(token) } }
        try await daemon.setGlobalEngine(IBusValues.engineName)
        guard try await IBusWait.until(focusWait, { host.snapshot.focusCount > 0 }) else {
            throw .unconfirmed("no input field took the keyboard focus through IBus")
        }
        guard token != nil else { return .unknown }
        // The FocusIn came on our engine's connection; the daemon sent its CommitText before it,
        // on this one. A round trip here delivers everything the daemon sent this connection
        // before its answer (a red-team pass lost a Hangul syllable in 1 of 3 runs without it).
        _ = try? await daemon.globalEngine()
        let composition = committed.withLock { $0.joined() }
        return composition.isEmpty ? .none : .committed(composition)
    }

    /// Nil once a report of the field's text, after the piece was sent, shows everything sent so
    /// far before its cursor. A field that shows something else throws (the rest is not sent); one
    /// that reports nothing returns why it is unconfirmed, and the rest is sent regardless.
    private static func waitUntilShown(_ sent: String, host: IBusEngineHost, after before: Int,
                                       reports: Bool) async throws(InsertionError) -> InsertionError? {
        guard reports else {
            return .unconfirmed("the window does not report its text to IBus, so the arrival of the text cannot be confirmed")
        }
        let shown = try await IBusWait.until(confirmWait) {
            host.snapshot.surroundings.dropFirst(before).contains { SurroundingText.confirms($0, committed: sent) }
        }
        if shown { return nil }
        let seconds = confirmWait.components.seconds
        // A terminal (VTE) takes the commit but never reports its text: measured on GNOME.
        guard host.snapshot.surroundings.count > before else {
            return .unconfirmed("no field reported text within \(seconds) s of the commit through IBus (none has the focus, or the window does not report its text, as terminals do not), "
                                + "so its arrival cannot be confirmed")
        }
        throw .unconfirmed("the field did not show the text committed through IBus within \(seconds) s")
    }
}
