/// What types: a program, or IBus (the session's input method, spoken to on its own bus).
public enum Typer: String, CaseIterable, Sendable {
    case xdotool, wtype, ydotool, ibus

    /// Whether it can press keys (the paste keys): IBus commits text and presses none.
    public var pressesKeys: Bool { self != .ibus }
}

/// Where inserted text goes.
public enum InsertionMode: String, CaseIterable, Sendable {
    /// Typed as keystrokes (or pasted where typing would garble it).
    case type
    /// Through the clipboard and Ctrl+V, the clipboard restored afterwards.
    case paste
    /// Only put on the clipboard.
    case clipboard
}

/// What will be done, decided before anything runs (so it is unit-tested).
public enum InsertionPlan: Equatable, Sendable {
    case type(Typer)
    /// Paste with `keys` sending Ctrl+V.
    case paste(ClipboardKind, keys: Typer)
    case clipboard(ClipboardKind)
    /// The clipboard, and a word that it must be pasted by hand (nothing can send Ctrl+V).
    case clipboardForHand(ClipboardKind)

    /// `typer`: --typer, or nil to choose. `ydotoolSocket`: whether ydotoold's socket exists.
    /// `ibus`: whether the session's IBus daemon answers. GNOME and KDE on Wayland have no virtual
    /// keyboard: IBus types there (any Unicode, no set-up), then ydotool (root's uinput set-up),
    /// then the clipboard and a word to paste by hand.
    public static func choose(_ mode: InsertionMode, text: String, session: DesktopSession, typer: Typer?,
                              ydotoolSocket: Bool, ibus: Bool = false) throws(InsertionError) -> InsertionPlan {
        guard session != .none else { throw .noSession }
        let clipboard: ClipboardKind = session == .x11 ? .xclip : .wlClipboard
        // The keys that paste need a typer that presses keys: not IBus.
        let keys: Typer? = typer ?? {
            switch session {
            case .x11: return .xdotool
            case .wlroots: return .wtype
            case .gnomeOrKDE: return ydotoolSocket ? .ydotool : nil
            case .none: return nil
            }
        }()
        let chosen: Typer? = typer ?? (session == .gnomeOrKDE && ibus ? .ibus : keys)
        switch mode {
        case .clipboard:
            return .clipboard(clipboard)
        case .paste:
            guard let keys else { return .clipboardForHand(clipboard) }
            guard keys.pressesKeys else { throw .failed("IBus commits text and presses no keys: it cannot paste (use --output type)") }
            return .paste(clipboard, keys: keys)
        case .type:
            guard let chosen else { return .clipboardForHand(clipboard) }
            // ydotool types US key codes: anything but plain ASCII would come out wrong. Paste it.
            if chosen == .ydotool, !Ydotool.canType(text) {
                return .paste(clipboard, keys: .ydotool)
            }
            return .type(chosen)
        }
    }
}
