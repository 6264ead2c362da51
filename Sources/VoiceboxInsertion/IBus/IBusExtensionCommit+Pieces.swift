import VoiceboxBus
import VoiceboxThreads

/// Committing as the panel extension, piece by piece (IBusTyper.nextPiece).
///
/// What counts as arrived: the daemon committed every piece to the focused context's client (on
/// X11 the application itself, on Wayland the compositor's shell, which passes it on), and where
/// the field reports its text (the user's engine asked fields for it), that text shows it. A field
/// that reports no text and refuses part of it (a length limit) is not noticed, as it is not when
/// keys are typed.
///
/// On Wayland each piece also waits for the client's next report of the field (its text, or where
/// its cursor is), which comes once the application has taken the frame that carried it: mutter
/// keeps one commit per client and frame, and a second one in the same frame replaces the first.
extension IBusExtensionCommit {
    /// What the client has reported of its field since a piece was committed.
    enum Verdict: Equatable {
        case waiting
        /// Its text shows everything sent so far before the cursor.
        case shown
        /// It reports no text (the user's engine did not ask for it), but where its cursor is.
        case reported
    }

    /// How long an X11 client (which takes each commit at once, with no frames to wait for) may
    /// take to report its field's text, where it reports it.
    static let unframedReportWait: Duration = .milliseconds(300)

    /// `framed`: the client passes commits on one per frame (Wayland).
    static func commit(_ text: String, into context: String, framed: Bool, connection: BusConnection,
                       events: Locked<[Event]>) async throws(InsertionError) {
        var rest = Substring.UnicodeScalarView(text.unicodeScalars)
        var sent = ""
        var unreported: InsertionError?
        while !rest.isEmpty {
            try InsertionGuard.checkInterrupted()
            guard focusedContext(events) == context else {
                throw .unconfirmed("the field lost the keyboard focus while the text was committed through IBus")
            }
            let piece = String(Substring(IBusTyper.nextPiece(&rest)))
            let mark = events.withLock { $0.count }
            connection.emit(path: path, interface: panel.name, member: IBusInterfaces.commitText.name,
                            arguments: [.variant(IBusValues.text(piece))])
            var handed: Int?
            _ = try await IBusWait.until(IBusTyper.confirmWait) {
                handed = events.withLock { Self.handedOn(piece, to: context, in: $0, from: mark) }
                return handed != nil
            }
            guard let handed else {
                if sent.isEmpty { throw .unconfirmed("no input field has the keyboard focus: IBus passed the text to no application") }
                throw .unconfirmed("IBus did not pass the rest of the text on to the field")
            }
            sent += piece
            if unreported == nil {
                unreported = try await waitForReport(sent, context: context, after: handed, framed: framed, events: events)
            } else if !rest.isEmpty {
                try? await Task.sleep(for: IBusTyper.unreportedSpacing)
            }
        }
        if let unreported { throw unreported }
    }

    /// Where in `events` (from `start`) the daemon committed `piece` to `context`'s client.
    static func handedOn(_ piece: String, to context: String, in events: [Event], from start: Int) -> Int? {
        events.indices.dropFirst(start).first { events[$0] == .committed(context: context, text: piece) }
    }

    /// What the reports of `context`'s field in `events` say of `sent`: a field that reports its
    /// text (`reportsText`: it did before) must show it (a report made before the commit landed may
    /// not, so it is waited for).
    static func verdict(_ sent: String, context: String, in events: ArraySlice<Event>, reportsText known: Bool = false) -> Verdict {
        var reportsText = known, reported = false
        for event in events {
            switch event {
            case .surrounding(context, let report):
                if SurroundingText.confirms(report, committed: sent) { return .shown }
                reportsText = true
            case .cursor(context):
                reported = true
            default:
                continue
            }
        }
        return reported && !reportsText ? .reported : .waiting
    }

    /// Nil once the field has reported the piece (`verdict`), or, on X11, has not reported its text
    /// at once (nothing else to wait for there). A field that shows other text throws (the rest is
    /// not sent); a Wayland client that reports nothing returns why it is unconfirmed, and the rest
    /// is sent regardless.
    private static func waitForReport(_ sent: String, context: String, after handed: Int, framed: Bool,
                                      events: Locked<[Event]>) async throws(InsertionError) -> InsertionError? {
        let wait = framed ? IBusTyper.confirmWait : unframedReportWait
        let known = events.withLock { $0[...handed].contains { if case .surrounding(context, _) = $0 { true } else { false } } }
        let reported = try await IBusWait.until(wait) {
            events.withLock { verdict(sent, context: context, in: $0[(handed + 1)...], reportsText: known) } != .waiting
        }
        if reported { return nil }
        let reportsText = known || events.withLock { $0[(handed + 1)...].contains { if case .surrounding(context, _) = $0 { true } else { false } } }
        if reportsText {
            if !framed, try await IBusWait.until(IBusTyper.confirmWait - wait, {
                events.withLock { verdict(sent, context: context, in: $0[(handed + 1)...]) } == .shown
            }) {
                return nil
            }
            throw .unconfirmed("the field did not show the text committed through IBus within \(IBusTyper.confirmWait.components.seconds) s")
        }
        guard framed else { return nil }
        return .unconfirmed("the field reported nothing within \(wait.components.seconds) s of the commit through IBus (the window does not "
                            + "report its text or cursor, or does not answer), so its arrival cannot be confirmed")
    }
}
