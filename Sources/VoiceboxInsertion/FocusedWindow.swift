import Foundation

/// The window that has the keyboard focus, as far as the session lets a program see it: on X11
/// (xdotool and xprop) and in sway (its IPC, swaymsg). Used to choose the paste keystroke by the
/// window's class, and to confirm that typing went where it began: the same window still has
/// the focus at the end (a window closed, or another one focused, midway is seen).
public struct FocusedWindow: Equatable, Sendable {
    /// The X window id or sway's node id.
    public var id: String
    /// WM_CLASS's class and instance (X11), or the app_id (Wayland); lower case.
    public var classes: [String]

    /// The one that chooses the paste keys: the first a rule knows, else the first.
    public var pasteKeys: PasteKeys {
        for name in classes {
            let keys = PasteKeys.forWindow(name)
            if keys != .ctrlV { return keys }
        }
        return .ctrlV
    }

    /// nil where the session does not tell (GNOME, KDE and other Wayland compositors without
    /// sway's IPC), or when nothing has the focus; a failure names the program.
    static func current(_ session: DesktopSession, environment: [String: String]) throws(InsertionError) -> FocusedWindow? {
        switch session {
        case .x11: return try x11()
        case .wlroots where environment["SWAYSOCK"].map({ !$0.isEmpty }) ?? false: return try sway()
        default: return nil
        }
    }

    static func x11() throws(InsertionError) -> FocusedWindow? {
        // xdotool reports the client window (the one with WM_CLASS) of what has the focus.
        let id = String(decoding: try Programs.run("xdotool", for: "typing on X11", ["getwindowfocus"], captureOutput: true),
                        as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !id.isEmpty, id != "0", let number = UInt64(id), number > 1 else { return nil }
        guard let xprop = Programs.lookUp("xprop") else { return FocusedWindow(id: id, classes: []) }
        let result = try ChildProcess.run(xprop, ["-id", id, "WM_CLASS"], captureOutput: true, timeout: .seconds(2))
        return FocusedWindow(id: id, classes: result.status == 0 ? parseWMClass(String(decoding: result.output, as: UTF8.self)) : [])
    }

    /// `WM_CLASS(STRING) = "xterm", "XTerm"` → ["xterm", "xterm"] (instance, class).
    static func parseWMClass(_ text: String) -> [String] {
        guard let equals = text.firstIndex(of: "=") else { return [] }
        return text[text.index(after: equals)...].split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: "\"")).lowercased()
        }.filter { !$0.isEmpty }
    }

    static func sway() throws(InsertionError) -> FocusedWindow? {
        let tree = try Programs.run("swaymsg", for: "knowing sway's focused window", ["-t", "get_tree", "-r"], captureOutput: true)
        return parseSwayTree(tree)
    }

    /// The focused node of `swaymsg -t get_tree -r`'s JSON: its id and app_id (or, for an X11
    /// window under XWayland, its class and instance).
    static func parseSwayTree(_ json: [UInt8]) -> FocusedWindow? {
        guard let root = try? JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else { return nil }
        var stack = [root]
        while let node = stack.popLast() {
            if node["focused"] as? Bool == true {
                guard let id = node["id"].map({ "\($0)" }), node["type"] as? String == "con" || node["type"] as? String == "floating_con"
                else { return nil }
                var classes: [String] = []
                if let app = node["app_id"] as? String { classes.append(app.lowercased()) }
                if let properties = node["window_properties"] as? [String: Any] {
                    for key in ["class", "instance"] { if let name = properties[key] as? String { classes.append(name.lowercased()) } }
                }
                return FocusedWindow(id: id, classes: classes)
            }
            for key in ["nodes", "floating_nodes"] { stack += (node[key] as? [[String: Any]]) ?? [] }
        }
        return nil
    }
}
