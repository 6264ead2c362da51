/// wlroots compositors (sway, Hyprland): wtype types through the virtual-keyboard protocol with
/// a keymap of its own, so any Unicode text arrives exactly.
///
/// Each run sends its keymap and at once its first key; the focused client may not have taken the
/// new keymap yet and drops that key (measured in sway with foot: 5 first characters of 8 lost).
/// A short sleep before the first key (`-s`, in the key sequence itself) keeps it: 10 of 10 at 60,
/// 120 and 200 ms.
enum Wtype {
    static let purpose = "typing on Wayland"
    static let keymapSettleMilliseconds = "120"  // 60 held on an idle machine; margin for a loaded one

    static func type(_ text: String) throws(InsertionError) {
        try Programs.run("wtype", for: purpose, ["-s", keymapSettleMilliseconds, "--", text], timeout: typingTimeout(text))
    }

    static func pasteKeystroke() throws(InsertionError) {
        try Programs.run("wtype", for: "pasting on Wayland", ["-s", keymapSettleMilliseconds, "-M", "ctrl", "v", "-m", "ctrl"])
    }
}
