/// Which graphical session this is, from the environment alone.
public enum DesktopSession: Equatable, Sendable {
    case x11
    /// sway, Hyprland, river...: the virtual-keyboard protocol, so wtype can type.
    case wlroots
    /// GNOME (Mutter) and KDE (KWin) on Wayland: no virtual-keyboard protocol for clients.
    case gnomeOrKDE
    case none

    /// X11 when DISPLAY is set and WAYLAND_DISPLAY is not (or XDG_SESSION_TYPE=x11); Wayland
    /// when WAYLAND_DISPLAY is set, told apart by XDG_CURRENT_DESKTOP (InsertionRoute then asks
    /// the compositor itself whether it offers a virtual keyboard: WaylandGlobals).
    public static func detect(_ environment: [String: String]) -> DesktopSession {
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
            || desktops.contains { $0.hasSuffix("GNOME") || $0.hasSuffix("CINNAMON") }
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
