import VoiceboxBus
import VoiceboxContract
import VoiceboxThreads

/// The compositions (preedits) IBus shows in each input context, watched from when this starts:
/// `dictate` starts it before it listens. Needed only where Voicebox types with an engine of its
/// own (IBus's panel extension taken by another: IBusTyper). Switching IBus's engine ends a
/// composition as a focus change does: the daemon commits it if the engine declared so (IBus's
/// PREEDIT_COMMIT, as ibus-hangul does) and drops it otherwise (PREEDIT_CLEAR: a dead key
/// half-typed in IBus's xkb engines). So a composition seen in progress in the focused field
/// holds the typing back until the user ends it (`wait`): the text then follows it. Even one
/// declared to be committed: on a loaded machine the daemon's commit of it was lost in 9 of 231
/// switches (a red-team pass).
/// Still there after that, the text is kept instead (putting it on the clipboard with wl-copy
/// takes the focus for a moment on GNOME, which ends the composition: measured).
///
/// IBus's bus hands every signal to each connection whose match rule fits, whoever it is sent to:
/// the daemon's UpdatePreeditText(WithMode) to the client are seen here. A composition begun
/// before the watch started is not known (IBus has no way to ask for one): see docs/dictation.md.
public final class CompositionWatch: Sendable {
    struct Preedit: Equatable, Sendable {
        var text: String
        var visible: Bool
        /// 1: the daemon commits it when the engine changes (PREEDIT_COMMIT); 0, or nil (a client
        /// told without the mode), it is dropped.
        var mode: UInt32?

        var inProgress: Bool { visible && !text.isEmpty }
        var survivesASwitch: Bool { mode == 1 }
    }

    private let daemon: IBusDaemon
    private let preedits = Locked<[String: Preedit]>([:])
    private let onWait: @Sendable (String) -> Void

    /// How long a composition in progress may take to end before the text is kept instead.
    static let wait: Duration = .seconds(10)

    private init(daemon: IBusDaemon, onWait: @escaping @Sendable (String) -> Void) {
        self.daemon = daemon
        self.onWait = onWait
    }

    /// Starts watching the session's IBus when typing would go through it (GNOME or KDE on Wayland,
    /// or `typer` is ibus); nil otherwise, or when no IBus daemon answers. `onWait` hears, in a
    /// sentence, that the typing waits for a composition to end.
    public static func start(typer: Typer?, environment: [String: String],
                             onWait: @escaping @Sendable (String) -> Void = { _ in }) async -> CompositionWatch? {
        guard typer == .ibus || (typer == nil && DesktopSession.detect(environment) == .gnomeOrKDE),
              let daemon = await IBusDaemon.connect(environment) else { return nil }
        let watch = CompositionWatch(daemon: daemon, onWait: onWait)
        let preedits = watch.preedits
        let filter = SignalFilter(sender: IBusInterfaces.busName, interface: "org.freedesktop.IBus.InputContext")
        do {
            _ = try await daemon.connection.subscribe(filter) { signal in
                preedits.withLock { Self.note(signal.member, path: signal.path, signal.arguments, in: &$0) }
            }
        } catch {
            await daemon.close()
            return nil
        }
        return watch
    }

    public func close() async { await daemon.close() }

    /// One InputContext signal: UpdatePreeditText (v text, u cursor, b visible), the same WithMode
    /// (u mode), ShowPreeditText, HidePreeditText; `path` is the input context's.
    static func note(_ member: String, path: String, _ arguments: [DBusValue], in preedits: inout [String: Preedit]) {
        switch member {
        case "UpdatePreeditText", "UpdatePreeditTextWithMode":
            guard arguments.count >= 3, let text = IBusValues.string(ofText: arguments[0]), let visible = arguments[2].bool else { return }
            preedits[path] = Preedit(text: text, visible: visible, mode: arguments.count > 3 ? arguments[3].uint32 : nil)
        case "ShowPreeditText": preedits[path]?.visible = true
        case "HidePreeditText": preedits[path]?.visible = false
        default: break
        }
    }

    /// The focused field's composition, if one is in progress: a switch of engines drops it, or
    /// (declared to survive it) is meant to commit it but may not.
    func fragileComposition(_ daemon: IBusDaemon) async -> Preedit? {
        guard let context = await daemon.focusedInputContext() else { return nil }
        return preedits.withLock { preedits in preedits[context].flatMap { $0.inProgress ? $0 : nil } }
    }

    /// Waits (bounded) until the focused field has no composition a switch would drop; throws
    /// `.unconfirmed` naming it when one is still there: nothing has been changed then.
    func waitUntilNoFragileComposition(_ daemon: IBusDaemon) async throws(InsertionError) {
        var composition = await fragileComposition(daemon)
        if let composition {
            onWait("waiting up to \(Self.wait.components.seconds) s for your input method's composition \u{201C}\(composition.text)\u{201D} "
                   + "to end: the text follows it")
        }
        let deadline = ContinuousClock.now + Self.wait
        while composition != nil, ContinuousClock.now < deadline {
            try InsertionGuard.checkInterrupted()
            try? await Task.sleep(for: .milliseconds(50))
            composition = await fragileComposition(daemon)
        }
        if let composition {
            throw .unconfirmed("your input method is composing \u{201C}\(composition.text)\u{201D} in the field; the text was not typed, "
                               + "so as not to end the composition")
        }
    }
}
