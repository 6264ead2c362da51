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

    /// Characters per wtype run: between two runs the focus and signals are checked (`between`),
    /// so at most this many go astray; each run waits `keymapSettleMilliseconds` first.
    static let chunkCharacters = 96

    /// `between` runs before every chunk but the first; what it throws stops the typing. Chunks end
    /// between characters (grapheme clusters), so an emoji sequence or a letter with its accent
    /// is never split.
    static func type(_ text: String, between: () throws(InsertionError) -> Void = {}) throws(InsertionError) {
        var rest = Substring(text)
        var first = true
        while !rest.isEmpty {
            if !first { try between() }
            first = false
            let chunk = String(rest.prefix(chunkCharacters))
            rest = rest.dropFirst(chunkCharacters)
            do {
                try Programs.run("wtype", for: purpose, ["-s", keymapSettleMilliseconds, "--", chunk], timeout: typingTimeout(chunk))
            } catch {
                try InsertionGuard.checkInterrupted()
                throw error
            }
        }
    }

    static func pasteKeystroke(_ keys: PasteKeys) throws(InsertionError) {
        try Programs.run("wtype", for: "pasting on Wayland", ["-s", keymapSettleMilliseconds] + keys.wtype)
    }
}
