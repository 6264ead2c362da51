/// Which graphical session this is, from the environment alone.
public enum Session: Equatable, Sendable {
    case x11
    /// sway, Hyprland, river...: the virtual-keyboard protocol, so wtype can type.
    case wlroots
    /// GNOME (Mutter) and KDE (KWin) on Wayland: no virtual-keyboard protocol for clients.
    case gnomeOrKDE
    case none

    /// X11 when DISPLAY is set and WAYLAND_DISPLAY is not (or XDG_SESSION_TYPE=x11); Wayland
    /// when WAYLAND_DISPLAY is set, told apart by XDG_CURRENT_DESKTOP.
    public static func detect(_ environment: [String: String]) -> Session {
        func value(_ name: String) -> String? {
            guard let value = environment[name], !value.isEmpty else { return nil }
            return value
        }
        let display = value("DISPLAY"), wayland = value("WAYLAND_DISPLAY")
        if display != nil, wayland == nil || value("XDG_SESSION_TYPE")?.lowercased() == "x11" { return .x11 }
        guard wayland != nil else { return .none }
        // XDG_CURRENT_DESKTOP is a colon-separated list, e.g. "ubuntu:GNOME" or "KDE".
        let desktops = (value("XDG_CURRENT_DESKTOP") ?? "").uppercased().split(separator: ":")
        let noVirtualKeyboard = desktops.contains { ["GNOME", "KDE", "UNITY", "PANTHEON", "BUDGIE", "CINNAMON"].contains(String($0)) }
            || desktops.contains { $0.hasSuffix("GNOME") }
        return noVirtualKeyboard ? .gnomeOrKDE : .wlroots
    }

    var name: String {
        switch self {
        case .x11: "X11"
        case .wlroots, .gnomeOrKDE: "Wayland"
        case .none: "this session"
        }
    }
}

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
    public static func choose(_ mode: InsertionMode, text: String, session: Session, typer: Typer?,
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
