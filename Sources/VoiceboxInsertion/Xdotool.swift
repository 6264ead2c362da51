import Foundation

/// X11: the text is typed keysym by keysym with `xdotool key`, every character the layout lacks
/// bound beforehand to a spare keycode that stays bound until the window has surely read it
/// (XKeymap). `xdotool type` binds such a character for 12 ms only, and a loaded window that
/// reads the map late loses it (measured: "Café déjà vu — naïve façade, 100 % €" exact 1-3 times
/// in 10 on a US layout, 3-8 on French AZERTY, with both cores busy).
enum Xdotool {
    static let purpose = "typing on X11"
    /// Between keys: the map no longer changes while typing, so no pause is needed for it; a
    /// short one keeps key events from piling up in a slow window's queue.
    static let keyDelayMilliseconds = "4"

    /// Keys per `xdotool key` run: between two runs the focus and signals are checked (`between`),
    /// so at most this many keys go astray; a run costs about 5 ms, 32 keys about 150 ms.
    static let chunkKeys = 32

    /// `between` runs before every chunk of keys but the first, and once all are sent, before the
    /// map is given back; what it throws stops the typing.
    static func type(_ text: String, between: () throws(InsertionError) -> Void = {}) throws(InsertionError) {
        _ = try Programs.find("xdotool", for: purpose)
        // Plain ASCII is on every layout xdotool knows how to reach (any group): no map needed.
        let asciiOnly = text.unicodeScalars.allSatisfy { $0.isASCII }
        let map: XKeymap.Map
        if asciiOnly, Programs.lookUp("xmodmap") == nil {
            map = XKeymap.Map(present: Set((0x20...0x7E).map { UInt32($0) }), spare: [])
        } else {
            map = try XKeymap.read()
        }
        let parts = XKeymap.plan(text, map: map)
        var bound: [XKeymap.Binding] = []
        var typed = false
        defer {
            if !bound.isEmpty {
                // The last keys may still wait in the window's queue: it must read them with the map they were typed with.
                sleep(XKeymap.grace)
                try? XKeymap.unbind(bound)
            }
        }
        for part in parts {
            if !bound.isEmpty, !part.bindings.isEmpty { sleep(XKeymap.grace) }
            try XKeymap.bind(part.bindings)
            if !part.bindings.isEmpty { bound = part.bindings }
            let keys = keysyms(part.text, map: map, bindings: part.bindings)
            for start in stride(from: 0, to: keys.count, by: chunkKeys) {
                if typed { try between() }
                typed = true
                let chunk = Array(keys[start..<min(start + chunkKeys, keys.count)])
                // --clearmodifiers: a shortcut's modifiers still held (Super, Ctrl) must not change the keys.
                do {
                    try Programs.run("xdotool", for: purpose, ["key", "--clearmodifiers", "--delay", keyDelayMilliseconds] + chunk,
                                     timeout: .seconds(5) + .milliseconds(40 * chunk.count))
                } catch {
                    try InsertionGuard.checkInterrupted()  // Ctrl-C reached xdotool too: that is why it failed
                    throw error
                }
            }
        }
        try between()
    }

    /// xdotool key's arguments: each character's keysym in hex as the map holds it (the layout's
    /// own, or the one bound for it), Return and Tab for line breaks and tabs.
    static func keysyms(_ text: String, map: XKeymap.Map, bindings: [XKeymap.Binding]) -> [String] {
        let bound = Set(bindings.flatMap(\.scalars))
        return text.unicodeScalars.compactMap { scalar in
            switch scalar {
            case "\n": return "Return"
            case "\t": return "Tab"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F: return nil
            default:
                let candidates = XKeymap.keysyms(scalar)
                let keysym = bound.contains(scalar) ? XKeymap.boundKeysym(scalar) : (candidates.first(where: map.present.contains)
                                                                                    ?? XKeymap.boundKeysym(scalar))
                return "0x" + String(keysym, radix: 16)
            }
        }
    }

    static func pasteKeystroke(_ keys: PasteKeys) throws(InsertionError) {
        try Programs.run("xdotool", for: "pasting on X11", ["key", "--clearmodifiers", keys.xdotool])
    }

    static func sleep(_ duration: Duration) {
        let parts = duration.components
        usleep(UInt32(parts.seconds * 1_000_000 + parts.attoseconds / 1_000_000_000_000))
    }
}

/// Typing takes time in proportion to the text: 5 s, and more for a long dictation.
func typingTimeout(_ text: String) -> Duration {
    .seconds(5) + .milliseconds(40 * text.unicodeScalars.count)
}
