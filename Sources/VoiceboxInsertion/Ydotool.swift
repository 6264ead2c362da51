import Foundation

/// GNOME and KDE on Wayland: ydotool types through the kernel (uinput, its daemon ydotoold).
/// It sends US key codes, so it is only used for plain ASCII; anything else is pasted.
enum Ydotool {
    static let purpose = "typing on GNOME or KDE Wayland"

    /// Whether ydotoold's socket is there ($YDOTOOL_SOCKET, or its default places).
    static func socketExists(_ environment: [String: String]) -> Bool {
        var candidates = ["/tmp/.ydotool_socket"]
        if let socket = environment["YDOTOOL_SOCKET"], !socket.isEmpty { candidates = [socket] }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { candidates.append(runtime + "/.ydotool_socket") }
        return candidates.contains { path in
            var info = stat()
            return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
        }
    }

    static func type(_ text: String) throws(InsertionError) {
        try Programs.run("ydotool", for: purpose, ["type", "--", text], timeout: typingTimeout(text))
    }

    /// Ctrl+V as Linux key codes: KEY_LEFTCTRL 29, KEY_V 47 (press:1, release:0).
    static func pasteKeystroke() throws(InsertionError) {
        try Programs.run("ydotool", for: "pasting on GNOME or KDE Wayland", ["key", "29:1", "47:1", "47:0", "29:0"])
    }
}
