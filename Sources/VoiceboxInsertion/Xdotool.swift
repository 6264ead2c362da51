/// X11: xdotool types any Unicode text exactly, whatever the keyboard layout (a character the
/// layout lacks is typed by remapping a spare keycode for the moment). Not `--delay 0`: the
/// remapping is undone before the window has read the key, and é, ï, ö went missing under Xvfb
/// with a French keymap; xdotool's own 12 ms between keys gives them all.
enum Xdotool {
    static let purpose = "typing on X11"

    static func type(_ text: String) throws(InsertionError) {
        // --clearmodifiers: a shortcut's modifiers still held (Super, Ctrl) must not change the keys.
        try Programs.run("xdotool", for: purpose, ["type", "--clearmodifiers", "--delay", "12", "--", text],
                         timeout: typingTimeout(text))
    }

    static func pasteKeystroke() throws(InsertionError) {
        try Programs.run("xdotool", for: "pasting on X11", ["key", "--clearmodifiers", "ctrl+v"])
    }
}

/// Typing takes time in proportion to the text: 5 s, and more for a long dictation.
func typingTimeout(_ text: String) -> Duration {
    .seconds(5) + .milliseconds(40 * text.unicodeScalars.count)
}
