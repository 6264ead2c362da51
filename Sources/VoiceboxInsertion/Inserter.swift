import Foundation

/// Inserts text into the focused window: typed, pasted (the clipboard restored afterwards) or
/// only put on the clipboard, with the programs this session has. Whatever cannot be done, or
/// cannot be confirmed, is thrown: the caller keeps the text (`keep`).
public enum Inserter {
    /// How long the window gets to ask for the pasted text (a loaded window answers its keys late).
    public static let pasteWait: Duration = .seconds(3)

    /// Returns a note for the user when the text could only be put on the clipboard. `report` hears,
    /// before anything is done, the way chosen and why (`--verbose`). `watch`: the input method's
    /// compositions, watched since dictation began (IBus only).
    @discardableResult
    public static func insert(_ text: String, mode: InsertionMode, typer: Typer? = nil, pasteKeys: PasteKeys? = nil,
                              environment: [String: String] = ProcessInfo.processInfo.environment, watch: CompositionWatch? = nil,
                              report: (String) -> Void = { _ in }) async throws(InsertionError) -> String? {
        // The way is chosen under the guard too: a signal while it is (up to 2 s for IBus's daemon
        // to answer) is noted, and the text kept, as during the typing.
        var ibus: IBusDaemon?
        let outcome: Result<String?, InsertionError>
        do {
            outcome = .success(try await InsertionGuard.run(environment: environment) { () async throws(InsertionError) -> String? in
                let route = try await InsertionRoute.choose(mode, text: text, typer: typer, environment: environment)
                ibus = route.ibus
                report(route.description)
                try InsertionGuard.checkInterrupted()
                guard case .type(.ibus) = route.plan else {
                    return try carryOut(route.plan, text: text, pasteKeys: pasteKeys, session: route.session, environment: environment)
                }
                guard let daemon = route.ibus else { throw .failed("typing through IBus: no IBus daemon answers in this session") }
                try await IBusTyper.type(text, daemon: daemon, framed: route.session != .x11, watch: watch, report: report)
                return nil
            })
        } catch {
            outcome = .failure(error)
        }
        await ibus?.close()
        return try outcome.get()
    }

    private static func carryOut(_ plan: InsertionPlan, text: String, pasteKeys: PasteKeys?, session: DesktopSession,
                                 environment: [String: String]) throws(InsertionError) -> String? {
        switch plan {
        case .type(let typer):
            try type(text, with: typer, session: session, environment: environment)
        case .paste(let clipboard, let keys):
            try paste(text, clipboard: clipboard, keys: keys, override: pasteKeys, session: session, environment: environment)
        case .clipboard(let clipboard):
            try Clipboard.setText(clipboard, text)
        case .clipboardForHand(let clipboard):
            try Clipboard.setText(clipboard, text)
            return "the text is on the clipboard: paste it with Ctrl+V (GNOME and KDE on Wayland let programs type only through IBus, "
                + "whose daemon does not answer here, or ydotool, whose daemon ydotoold is not running)"
        }
        return nil
    }

    /// Types in chunks, and where the session shows the focus, checks it before each chunk and at
    /// the end: the window that had it at the start must still have it (closed or left midway, the
    /// rest would go elsewhere: typing stops, at most one chunk went astray). A signal that asked
    /// the process to end stops typing the same way (InsertionGuard).
    static func type(_ text: String, with typer: Typer, session: DesktopSession, environment: [String: String]) throws(InsertionError) {
        let before = typer == .ydotool ? nil : try FocusedWindow.current(session, environment: environment)
        if session == .x11, typer == .xdotool, before == nil {
            throw .unconfirmed("no window has the keyboard focus")
        }
        let check = { () throws(InsertionError) in
            try InsertionGuard.checkInterrupted()
            try confirm(before, session, environment)
        }
        switch typer {
        case .xdotool: try Xdotool.type(text, between: check)
        case .wtype: try Wtype.type(text, between: check)
        case .ydotool: try Ydotool.type(text)
        case .ibus: throw .failed("IBus types through its own route")  // (insert sends it there)
        }
        try check()
    }

    static func confirm(_ before: FocusedWindow?, _ session: DesktopSession, _ environment: [String: String]) throws(InsertionError) {
        guard let before else { return }
        let after = try? FocusedWindow.current(session, environment: environment)
        guard after?.id == before.id else {
            let name = before.classes.first.map { "the window (\($0))" } ?? "the window"
            throw .unconfirmed("\(name) was closed or lost the keyboard focus while the text was typed")
        }
    }

    static func pasteKeystroke(_ typer: Typer, _ keys: PasteKeys) throws(InsertionError) {
        switch typer {
        case .xdotool: try Xdotool.pasteKeystroke(keys)
        case .wtype: try Wtype.pasteKeystroke(keys)
        case .ydotool: try Ydotool.pasteKeystroke(keys)
        case .ibus: throw .failed("IBus presses no keys: it cannot paste")
        }
    }

    /// Pastes `text` with the keys the focused window pastes with (Shift+Insert and PRIMARY for
    /// xterm, Ctrl+Shift+V for terminals, Ctrl+V elsewhere; `override` wins), confirms that the
    /// window asked for it, and puts back what the selections held. Unconfirmed, the text is
    /// left on the clipboard and that is thrown.
    static func paste(_ text: String, clipboard: ClipboardKind, keys typer: Typer, override: PasteKeys?, session: DesktopSession,
                      environment: [String: String]) throws(InsertionError) {
        // Every program needed is checked first: nothing is changed when one is missing.
        _ = try Programs.find(typer.rawValue, for: typer == .xdotool ? "pasting on X11" : typer == .wtype ? "pasting on Wayland" : Ydotool.purpose)
        for program in clipboard == .xclip ? ["xclip"] : ["wl-copy", "wl-paste"] {
            _ = try Programs.find(program, for: Clipboard.purpose(clipboard))
        }
        let window = typer == .ydotool ? nil : try FocusedWindow.current(session, environment: environment)
        let keys = override ?? window?.pasteKeys ?? .ctrlV
        let selection: Selection = keys.pastesPrimary ? .primary : .clipboard
        let saved = try Clipboard.save(clipboard)
        let savedPrimary = selection == .primary ? try Clipboard.save(clipboard, .primary) : nil
        // The text in both selections: the keys paste one of them, a user's own paste after a
        // failure takes the other. The one the keys paste is offered once, to see it taken.
        if selection == .primary { try Clipboard.setText(clipboard, text) }
        let offer = try SelectionOffer(clipboard, selection, text: text)
        try pasteKeystroke(typer, keys)
        let taken = offer.waitForPaste(within: pasteWait)
        guard taken else {
            try? Clipboard.setText(clipboard, text)
            let name = window?.classes.first.map { "the window (\($0))" } ?? "the window"
            throw .unconfirmed("\(name) did not take the paste (\(keys) was sent)")
        }
        try Clipboard.restore(clipboard, saved)
        if selection == .primary { try Clipboard.restore(clipboard, savedPrimary, selection: .primary) }
    }
}

extension Inserter {
    /// Puts `text` on the session's clipboard, for a text that could not be inserted.
    public static func keepOnClipboard(_ text: String,
                                       environment: [String: String] = ProcessInfo.processInfo.environment) throws(InsertionError) {
        switch DesktopSession.detect(environment) {
        case .none: throw .noSession
        case .x11: try Clipboard.setText(.xclip, text)
        case .wlroots, .gnomeOrKDE: try Clipboard.setText(.wlClipboard, text)
        }
    }
}
