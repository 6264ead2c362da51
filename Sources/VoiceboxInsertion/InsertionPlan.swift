/// The programs that type.
public enum Typer: String, CaseIterable, Sendable {
    case xdotool, wtype, ydotool
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
    public static func choose(_ mode: InsertionMode, text: String, session: DesktopSession, typer: Typer?,
                              ydotoolSocket: Bool) throws(InsertionError) -> InsertionPlan {
        guard session != .none else { throw .noSession }
        let clipboard: ClipboardKind = session == .x11 ? .xclip : .wlClipboard
        let chosen: Typer? = typer ?? {
            switch session {
            case .x11: return .xdotool
            case .wlroots: return .wtype
            case .gnomeOrKDE: return ydotoolSocket ? .ydotool : nil
            case .none: return nil
            }
        }()
        switch mode {
        case .clipboard:
            return .clipboard(clipboard)
        case .paste:
            guard let chosen else { return .clipboardForHand(clipboard) }
            return .paste(clipboard, keys: chosen)
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
