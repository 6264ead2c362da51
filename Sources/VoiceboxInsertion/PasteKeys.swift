/// The keystroke that pastes, chosen by the focused window's class: most programs paste with
/// Ctrl+V, terminal emulators with Ctrl+Shift+V (Ctrl+V is their "insert the next key
/// literally"), and xterm and rxvt with Shift+Insert, from the PRIMARY selection. `--paste-keys`
/// overrides the choice.
public struct PasteKeys: Equatable, Sendable, CustomStringConvertible {
    public enum Modifier: String, CaseIterable, Sendable {
        case ctrl, shift, alt, `super`
    }

    public var modifiers: [Modifier]
    /// An X keysym name: `v`, `Insert`.
    public var key: String

    public init(modifiers: [Modifier], key: String) {
        self.modifiers = modifiers
        self.key = key
    }

    public static let ctrlV = PasteKeys(modifiers: [.ctrl], key: "v")
    public static let ctrlShiftV = PasteKeys(modifiers: [.ctrl, .shift], key: "v")
    public static let shiftInsert = PasteKeys(modifiers: [.shift], key: "Insert")

    /// `ctrl+shift+v`, `shift+Insert` (xdotool's spelling; `control` and `meta`/`logo` too).
    public init?(_ text: String) {
        let parts = text.split(separator: "+", omittingEmptySubsequences: false).map(String.init)
        guard let key = parts.last, !key.isEmpty, key.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") }) else {
            return nil
        }
        var modifiers: [Modifier] = []
        for name in parts.dropLast() {
            let modifier: Modifier? = switch name.lowercased() {
            case "ctrl", "control": .ctrl
            case "shift": .shift
            case "alt", "meta": .alt
            case "super", "logo", "win": .super
            default: nil
            }
            guard let modifier, !modifiers.contains(modifier) else { return nil }
            modifiers.append(modifier)
        }
        self.init(modifiers: modifiers, key: key.count == 1 ? key.lowercased() : key)
    }

    public var description: String { (modifiers.map(\.rawValue) + [key]).joined(separator: "+") }

    /// Whether the text must be in PRIMARY too: Shift+Insert pastes it in xterm and rxvt.
    public var pastesPrimary: Bool { self == .shiftInsert }

    /// For the focused window's class (X11 WM_CLASS's class or instance, a Wayland app_id).
    public static func forWindow(_ windowClass: String?) -> PasteKeys {
        guard let windowClass else { return .ctrlV }
        let name = windowClass.lowercased()
        if primaryTerminals.contains(name) { return .shiftInsert }
        if terminals.contains(name) || name.hasSuffix("terminal") || name.hasSuffix("-terminal") || name.hasSuffix("term") {
            return .ctrlShiftV
        }
        return .ctrlV
    }

    /// xterm and rxvt paste PRIMARY with Shift+Insert; they have no clipboard key of their own.
    static let primaryTerminals: Set<String> = ["xterm", "uxterm", "urxvt", "rxvt", "rxvt-unicode", "urxvt-unicode"]
    /// Terminal emulators whose paste is Ctrl+Shift+V (names without "term" in them; those with
    /// it, e.g. gnome-terminal, xfce4-terminal, lxterminal, kitty's "kitty" aside, are caught above).
    static let terminals: Set<String> = ["foot", "footclient", "kitty", "alacritty", "konsole", "tilix", "terminator",
                                         "sakura", "guake", "tilda", "terminology", "wezterm", "org.wezfurlong.wezterm",
                                         "st", "st-256color", "termite", "com.raggesilver.blackbox", "org.gnome.console",
                                         "kgx", "org.gnome.terminal", "org.gnome.ptyxis", "ptyxis", "cool-retro-term",
                                         "qterminal", "lxterminal", "mate-terminal", "xfce4-terminal", "gnome-terminal",
                                         "gnome-terminal-server", "contour", "rio", "ghostty", "com.mitchellh.ghostty",
                                         "io.elementary.terminal", "deepin-terminal", "yakuake", "hyper", "tabby",
                                         "warp", "zutty", "eterm", "aterm", "mlterm"]

    /// xdotool key's argument: `ctrl+shift+v`.
    var xdotool: String { description }

    /// wtype's arguments: press the modifiers, the key, release them.
    var wtype: [String] {
        let names = modifiers.map { modifier in
            switch modifier {
            case .ctrl: "ctrl"
            case .shift: "shift"
            case .alt: "alt"
            case .super: "logo"
            }
        }
        let key = ["-k", self.key]
        return names.flatMap { ["-M", $0] } + key + names.reversed().flatMap { ["-m", $0] }
    }

    /// ydotool's Linux key codes, pressed in order and released in reverse; nil for a key it
    /// has no code for here.
    var ydotool: [String]? {
        let codes: [String: Int] = ["v": 47, "Insert": 110, "y": 21, "p": 25]
        let modifierCodes: [Modifier: Int] = [.ctrl: 29, .shift: 42, .alt: 56, .super: 125]
        guard let key = codes[key] else { return nil }
        let all = modifiers.compactMap { modifierCodes[$0] } + [key]
        return all.map { "\($0):1" } + all.reversed().map { "\($0):0" }
    }
}
