import VoiceboxBus
import VoiceboxThreads

/// Committing as the panel extension, piece by piece (IBusTyper.nextPiece), each followed to the
/// field before the next is sent.
extension IBusExtensionCommit {
    /// What the client has reported of its field since a piece was committed.
    enum Verdict: Equatable {
        case waiting
        /// Its text shows everything sent so far before the cursor.
        case shown
        /// It reports no text (the user's engine did not ask for it), but its cursor moved.
        case cursorMoved
    }

    static func commit(_ text: String, into context: String, connection: BusConnection,
                       events: Locked<[Event]>) async throws(InsertionError) {
        var rest = Substring.UnicodeScalarView(text.unicodeScalars)
        var sent = ""
        var unconfirmed: InsertionError?
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
            if unconfirmed == nil {
                unconfirmed = try await waitForReport(sent, context: context, after: handed, events: events)
            } else if !rest.isEmpty {
                try? await Task.sleep(for: IBusTyper.unreportedSpacing)
            }
        }
        if let unconfirmed { throw unconfirmed }
    }

    /// Where in `events` (from `start`) the daemon committed `piece` to `context`'s client.
    static func handedOn(_ piece: String, to context: String, in events: [Event], from start: Int) -> Int? {
        events.indices.dropFirst(start).first { events[$0] == .committed(context: context, text: piece) }
    }

    /// What the reports of `context`'s field in `events` say of `sent`: a field that reports its
    /// text must show it (a report made before the commit landed may not, so it is waited for).
    static func verdict(_ sent: String, context: String, in events: ArraySlice<Event>) -> Verdict {
        var reportsText = false, cursorMoved = false
        for event in events {
            switch event {
            case .surrounding(context, let report):
                if SurroundingText.confirms(report, committed: sent) { return .shown }
                reportsText = true
            case .cursor(context):
                cursorMoved = true
            default:
                continue
            }
        }
        return cursorMoved && !reportsText ? .cursorMoved : .waiting
    }

    /// Nil once the field has reported the piece (`verdict`). A field that shows other text
    /// throws (the rest is not sent); one that reports nothing returns why it is unconfirmed, and
    /// the rest is sent regardless.
    private static func waitForReport(_ sent: String, context: String, after handed: Int,
                                      events: Locked<[Event]>) async throws(InsertionError) -> InsertionError? {
        let reported = try await IBusWait.until(IBusTyper.confirmWait) {
            events.withLock { verdict(sent, context: context, in: $0[(handed + 1)...]) } != .waiting
        }
        if reported { return nil }
        let seconds = IBusTyper.confirmWait.components.seconds
        let reportsText = events.withLock { $0[(handed + 1)...].contains { if case .surrounding(context, _) = $0 { true } else { false } } }
        if reportsText { throw .unconfirmed("the field did not show the text committed through IBus within \(seconds) s") }
        return .unconfirmed("the field reported nothing within \(seconds) s of the commit through IBus (the window does not report "
                            + "its text or cursor, as some terminals do not), so its arrival cannot be confirmed")
    }
}
