/// wlroots compositors (sway, Hyprland): wtype types through the virtual-keyboard protocol with
/// a keymap of its own, so any Unicode text arrives exactly.
enum Wtype {
    static let purpose = "typing on Wayland"

    static func type(_ text: String) throws(InsertionError) {
        try Programs.run("wtype", for: purpose, ["--", text], timeout: typingTimeout(text))
    }

    static func pasteKeystroke() throws(InsertionError) {
        try Programs.run("wtype", for: "pasting on Wayland", ["-M", "ctrl", "v", "-m", "ctrl"])
    }
}
