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

    /// The keys as Linux key codes (Ctrl+V: KEY_LEFTCTRL 29, KEY_V 47; press :1, release :0).
    static func pasteKeystroke(_ keys: PasteKeys) throws(InsertionError) {
        guard let codes = keys.ydotool else { throw .failed("ydotool: no key code known here for \(keys)") }
        try Programs.run("ydotool", for: "pasting on GNOME or KDE Wayland", ["key"] + codes)
    }

    /// What `ydotool type` sends for `text`: it types US key codes (its own table from characters to
    /// KEY_* codes and Shift), so only characters of a US keyboard come out right; anything else is
    /// pasted. The table is the US layout's printable ASCII, line break and tab.
    static func canType(_ text: String) -> Bool {
        text.unicodeScalars.allSatisfy { ($0.isASCII && $0.value >= 0x20 && $0.value != 0x7F) || $0 == "\n" || $0 == "\t" }
    }

    /// The US key code and shift of each character ydotool can type (for the tests: every character
    /// of the corpus that `canType` accepts has one; the others must go through paste).
    static func usKey(_ scalar: Unicode.Scalar) -> (code: Int, shift: Bool)? {
        let rows: [(String, String, [Int])] = [
            ("1234567890-=", "!@#$%^&*()_+", [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]),
            ("qwertyuiop[]", "QWERTYUIOP{}", [16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27]),
            ("asdfghjkl;'`", "ASDFGHJKL:\"~", [30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41]),
            ("\\zxcvbnm,./", "|ZXCVBNM<>?", [43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53]),
        ]
        switch scalar {
        case " ": return (57, false)
        case "\n": return (28, false)
        case "\t": return (15, false)
        default: break
        }
        for (plain, shifted, codes) in rows {
            if let index = plain.unicodeScalars.firstIndex(of: scalar) {
                return (codes[plain.unicodeScalars.distance(from: plain.unicodeScalars.startIndex, to: index)], false)
            }
            if let index = shifted.unicodeScalars.firstIndex(of: scalar) {
                return (codes[shifted.unicodeScalars.distance(from: shifted.unicodeScalars.startIndex, to: index)], true)
            }
        }
        return nil
    }
}
