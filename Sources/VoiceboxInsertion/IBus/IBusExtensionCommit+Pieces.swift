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
        /// The client moved its focus since the piece was sent: it may have reached no field.
        case focusMoved
        /// Its text shows everything sent so far before the cursor.
        case shown
        /// It reports no text (the user's engine did not ask for it), but where its cursor is.
        case reported
    }

    /// How long an X11 client (which takes each commit at once, with no frames to wait for) may
    /// take to report its field's text, where it reports it.
    static let unframedReportWait: Duration = .milliseconds(300)
    /// After the last piece on Wayland, for a focus move already under way to show.
    static let focusSettle: Duration = .milliseconds(150)
    static let focusMovedMidCommit = InsertionError.unconfirmed("the focus moved as the text was committed through IBus")

    /// `framed`: the client passes commits on one per frame (Wayland).
    static func commit(_ text: String, into context: String, framed: Bool, connection: BusConnection,
                       events: Locked<[Event]>) async throws(InsertionError) {
        var sent = ""
        var unreported: InsertionError?
        let first = events.withLock { $0.count }
        let all = pieces(of: text)
        for (index, piece) in all.enumerated() {
            try InsertionGuard.checkInterrupted()
            guard focusedContext(events) == context else {
                throw .unconfirmed("the field lost the keyboard focus while the text was committed through IBus")
            }
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
            if events.withLock({ Self.focusMoved(context, in: $0[mark...]) }) {
                throw focusMovedMidCommit
            }
            if unreported == nil {
                unreported = try await waitForReport(sent, context: context, after: handed, framed: framed, events: events)
            } else if index < all.count - 1 {
                try? await Task.sleep(for: IBusTyper.unreportedSpacing)
            }
        }
        if let unreported { throw unreported }
        // The shell's focus may move just as the last piece reaches the window (the overview
        // opening): its FocusIn and FocusOut then come after the report the piece was taken on.
        if framed { try? await Task.sleep(for: focusSettle) }
        if events.withLock({ Self.focusMoved(context, in: $0[first...]) }) {
            throw focusMovedMidCommit
        }
    }

    /// Whether the client moved its focus in `events`.
    static func focusMoved(_ context: String, in events: ArraySlice<Event>) -> Bool {
        events.contains { $0 == .clientFocus(context: context) }
    }

    /// The pieces `text` is committed in (IBusTyper.nextPiece), its closing line breaks one of
    /// their own: a field that reports only its cursor's line shows nothing of ours after them, so
    /// the text before them is seen in the field first (an empty field that refuses it all, as a
    /// number field, is not taken to show a text that ends in "new line").
    static func pieces(of text: String) -> [String] {
        let scalars = text.unicodeScalars
        var end = scalars.endIndex
        while end > scalars.startIndex, isLineBreak(scalars[scalars.index(before: end)]) { end = scalars.index(before: end) }
        var rest = Substring.UnicodeScalarView(scalars[..<end])
        var pieces: [String.UnicodeScalarView] = []
        while !rest.isEmpty {
            var piece = String.UnicodeScalarView(IBusTyper.nextPiece(&rest))
            // Nor does any other piece end in a line break: it goes with the next one, so that
            // each piece's last line has some of our text to show (a few bytes over the bound).
            if let previous = pieces.last, let carried = previous.lastIndex(where: { !isLineBreak($0) }),
               previous.index(after: carried) < previous.endIndex {
                piece = String.UnicodeScalarView(previous[previous.index(after: carried)...] + piece)
                pieces[pieces.count - 1] = String.UnicodeScalarView(previous[...carried])
            }
            pieces.append(piece)
        }
        if end < scalars.endIndex { pieces.append(String.UnicodeScalarView(scalars[end...])) }
        return pieces.map { String($0) }
    }

    /// A line feed or a carriage return: what ends a line in a field's text, alone or as CRLF.
    static func isLineBreak(_ scalar: Unicode.Scalar?) -> Bool {
        scalar == "\n" || scalar == "\r"
    }

    /// Where in `events` (from `start`) the daemon committed `piece` to `context`'s client.
    static func handedOn(_ piece: String, to context: String, in events: [Event], from start: Int) -> Int? {
        events.indices.dropFirst(start).first { events[$0] == .committed(context: context, text: piece) }
    }

    /// What the reports of `context`'s field in `events` say of `sent`: a field that reports its
    /// text (`reportsText`: it did before) must show it (a report made before the commit landed may
    /// not, so it is waited for).
    /// `baseline`: the field's last report before the piece was sent. After closing line breaks
    /// (their own piece, once the text before them was shown), a one-line report with the cursor
    /// at its start that differs from it shows them (a text view with text after the cursor).
    static func verdict(_ sent: String, context: String, in events: ArraySlice<Event>, reportsText known: Bool = false,
                        baseline: EngineReport.Surrounding? = nil) -> Verdict {
        var reportsText = known, reported = false
        for event in events {
            switch event {
            case .clientFocus(context):
                return .focusMoved
            case .surrounding(context, let report):
                if SurroundingText.confirms(report, committed: sent) { return .shown }
                if let baseline, report != baseline, isLineBreak(sent.unicodeScalars.last), !report.text.contains("\n"),
                   SurroundingText.beforeCursor(report).contains(where: \.isEmpty) {
                    return .shown
                }
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
        let baseline = events.withLock { $0[...handed].lazy.compactMap { $0.surrounding(of: context) }.last }
        var seen = Verdict.waiting
        let reported = try await IBusWait.until(wait) {
            seen = events.withLock { verdict(sent, context: context, in: $0[(handed + 1)...], reportsText: baseline != nil,
                                             baseline: baseline) }
            return seen != .waiting
        }
        if seen == .focusMoved { throw focusMovedMidCommit }
        if reported { return nil }
        let reportsText = baseline != nil || events.withLock { $0[(handed + 1)...].contains { $0.surrounding(of: context) != nil } }
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
