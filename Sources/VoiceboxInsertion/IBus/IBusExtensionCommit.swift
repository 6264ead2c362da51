import VoiceboxBus
import VoiceboxContract
import VoiceboxThreads

/// Typing as IBus's panel extension, the way IBus's own emoji picker types (ibus 1.5.19 and
/// later): the connection that owns the extension's name is told which input context has the
/// focus (FocusIn), and a CommitText it emits is committed there by the daemon. The user's
/// engine is never switched, so nothing of theirs is touched: a composition in progress (a dead
/// key, a Hangul syllable, a pinyin preedit) stays as they left it, and the text goes in before
/// it. The emoji picker that owns the name allows it to be taken and waits in the bus's queue:
/// it has the name back when we release it, or when this process dies, without our help.
///
/// Arrival: the daemon's CommitText to the focused context's client is watched (IBus's bus hands
/// every message to each connection whose match rule fits), then what the client reports next
/// about its field (see `commit`).
enum IBusExtensionCommit {
    static let name = "org.freedesktop.IBus.Panel.Extension.Emoji"
    static let path = "/org/freedesktop/IBus/Panel/Extension/Emoji"
    /// From owning the name to the daemon's FocusIn (sent before it answers RequestName).
    static let focusWait: Duration = .seconds(1)

    enum Outcome: Equatable {
        case typed
        /// Nothing was sent: the engine's way is the one left (why).
        case unavailable(String)
    }

    /// What the bus shows of the focused context: ours to watch, in the order it came.
    enum Event: Equatable {
        case focusIn(context: String)
        case focusOut(context: String)
        case committed(context: String, text: String)
        case surrounding(context: String, EngineReport.Surrounding)
        case cursor(context: String)
        /// The client moved its focus (the shell's overview opening, another field): a commit
        /// the daemon passed on around then may have reached no field.
        case clientFocus(context: String)

        /// The field's report of its text, if this is one from `context`.
        func surrounding(of context: String) -> EngineReport.Surrounding? {
            if case .surrounding(context, let report) = self { report } else { nil }
        }
    }

    static let panel = InterfaceDescription(name: "org.freedesktop.IBus.Panel", methods: [focusIn.description, focusOut.description,
                                                                                          destroy.description],
                                            signals: [IBusInterfaces.commitText.description])
    static let focusIn = BusMethod("FocusIn", "This input context has the focus.", in: ("context", ObjectPath.self))
    static let focusOut = BusMethod("FocusOut", "It lost it.", in: ("context", ObjectPath.self))
    static let destroy = BusMethod("Destroy", "The daemon no longer counts on this extension.")

    /// Types `text` into the focused field through `daemon`, on its own connection: a second one
    /// would be one more wait for the bus to answer (its Hello). Whatever happens, the name is
    /// released and the watch ended; the connection closes with the insertion (`Inserter`), which
    /// gives the name back too.
    /// `framed`: the client passes commits on one per frame (Wayland; see `commit`).
    static func type(_ text: String, daemon: IBusDaemon, framed: Bool) async throws(InsertionError) -> Outcome {
        let connection = daemon.connection
        let events = Locked<[Event]>([])
        let tokens: [UInt64]
        do {
            tokens = try await watch(connection, into: events)
        } catch {
            throw .failed("IBus's bus did not let Voicebox watch its input contexts: \(error.message)")
        }
        let outcome: Result<Outcome, InsertionError>
        do {
            outcome = .success(try await typeAsExtension(text, framed: framed, connection: connection, events: events))
        } catch {
            outcome = .failure(error)
        }
        try? await connection.releaseName(name)
        for token in tokens { connection.unsubscribe(token) }
        return try outcome.get()
    }

    private static func typeAsExtension(_ text: String, framed: Bool, connection: BusConnection,
                                        events: Locked<[Event]>) async throws(InsertionError) -> Outcome {
        let taken: BusConnection.NameRequestResult
        do {
            taken = try await connection.requestName(name, replacing: true)
        } catch {
            return .unavailable("IBus did not answer for its panel extension's name: \(error.message)")
        }
        guard taken == .primaryOwner else {
            return .unavailable("another program holds IBus's panel extension and does not let it go")
        }
        guard try await IBusWait.until(focusWait, { focusedContext(events) != nil }), let context = focusedContext(events) else {
            return .unavailable("this IBus daemon does not tell a panel extension which field has the focus (IBus before 1.5.19)")
        }
        try await commit(text, into: context, framed: framed, connection: connection, events: events)
        return .typed
    }

    /// Exports the extension's object and subscribes to what the daemon sends the focused
    /// context's client and what the client tells the daemon, before the name is taken. Returns
    /// the subscriptions.
    private static func watch(_ connection: BusConnection, into events: Locked<[Event]>) async throws(DBusError) -> [UInt64] {
        _ = try connection.export(path: path, interface: panel, handlers: [
            focusIn.handler { _, context in
                events.withLock { $0.append(.focusIn(context: context.path)) }
                return NoReply()
            },
            focusOut.handler { _, context in
                events.withLock { $0.append(.focusOut(context: context.path)) }
                return NoReply()
            },
            destroy.handler { _ in NoReply() },
        ])
        let contextInterface = "org.freedesktop.IBus.InputContext"
        let commits = try await connection.subscribe(SignalFilter(sender: IBusInterfaces.busName, interface: contextInterface,
                                                                  member: "CommitText")) { signal in
            guard let text = signal.arguments.first.flatMap(IBusValues.string(ofText:)) else { return }
            events.withLock { $0.append(.committed(context: signal.path, text: text)) }
        }
        do {
            let reports = try await connection.subscribe(SignalFilter(.methodCall, interface: contextInterface)) { call in
                guard let event = clientReport(call) else { return }
                events.withLock { $0.append(event) }
            }
            return [commits, reports]
        } catch {
            connection.unsubscribe(commits)
            throw error
        }
    }

    /// A client's SetSurroundingText (v text, u cursor, u anchor), SetCursorLocation(Relative),
    /// FocusIn or FocusOut.
    static func clientReport(_ call: Signal) -> Event? {
        switch call.member {
        case "SetSurroundingText":
            guard call.arguments.count == 3, let text = IBusValues.string(ofText: call.arguments[0]),
                  let cursor = call.arguments[1].uint32, let anchor = call.arguments[2].uint32 else { return nil }
            return .surrounding(context: call.path, .init(text: text, cursor: cursor, anchor: anchor))
        case "SetCursorLocation", "SetCursorLocationRelative":
            return .cursor(context: call.path)
        case "FocusIn", "FocusOut":
            return .clientFocus(context: call.path)
        default:
            return nil
        }
    }

    /// The context the daemon last focused this extension on, nil after its FocusOut.
    static func focusedContext(_ events: Locked<[Event]>) -> String? {
        events.withLock { events in
            for event in events.reversed() {
                switch event {
                case .focusIn(let context): return context
                case .focusOut: return nil
                default: continue
                }
            }
            return nil
        }
    }
}
