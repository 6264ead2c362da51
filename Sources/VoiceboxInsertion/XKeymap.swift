import Foundation

/// X11's keyboard map, for typing characters the layout lacks. xdotool types such a character by
/// binding it to a spare keycode, pressing that key, and binding the next one 12 ms later; a busy
/// window reads the map only when it handles the key, by then changed, and the character is lost
/// or wrong (measured under load: "Café déjà vu" exact 1-3 times in 10). Here every missing
/// character is bound before typing starts (two to a spare keycode, plain and shifted), stays
/// bound while the text is typed, and is unbound only after a grace period: whenever the window
/// reads the map, it holds all of them. xdotool then finds each on the layout and remaps nothing.
/// A text with more missing characters than there is room for is typed in parts, with the grace
/// period between them.
enum XKeymap {
    struct Map: Equatable {
        /// Every keysym on the layout.
        var present: Set<UInt32>
        /// Keycodes with no keysym at all.
        var spare: [Int]
    }

    /// A spare keycode and the characters bound to it (one or two: plain, shifted).
    struct Binding: Equatable {
        var keycode: Int
        var scalars: [Unicode.Scalar]
    }

    /// How long the window gets to read the map after the last key before it changes again.
    static let grace: Duration = .milliseconds(600)

    static func read() throws(InsertionError) -> Map {
        parse(String(decoding: try Programs.run("xmodmap", for: "typing on X11", ["-pk"], captureOutput: true), as: UTF8.self))
    }

    /// `xmodmap -pk`'s table: `   38    \t0x0061 (a)\t0x0041 (A)\t...` a line per keycode.
    static func parse(_ table: String) -> Map {
        var map = Map(present: [], spare: [])
        for line in table.split(separator: "\n") {
            let fields = line.split(whereSeparator: \.isWhitespace)
            guard let first = fields.first, let keycode = Int(first) else { continue }
            let keysyms = fields.dropFirst().compactMap { field -> UInt32? in
                guard field.hasPrefix("0x") else { return nil }
                return UInt32(field.dropFirst(2), radix: 16)
            }.filter { $0 != 0 }
            if keysyms.isEmpty { map.spare.append(keycode) } else { map.present.formUnion(keysyms) }
        }
        return map
    }

    /// The keysyms that stand for `scalar`: Latin-1 keysyms are the code point itself, every
    /// character has its Unicode keysym (0x1000000 + code point), and some have a legacy one
    /// as well (those a layout is likely to use for a character this text needs).
    static func keysyms(_ scalar: Unicode.Scalar) -> [UInt32] {
        let value = scalar.value
        var keysyms: [UInt32] = [0x0100_0000 + value]
        if (0x20...0x7E).contains(value) || (0xA0...0xFF).contains(value) { keysyms.append(value) }
        if let legacy = legacy[value] { keysyms.append(legacy) }
        return keysyms
    }

    /// The keysym a character is bound as (xmodmap's `U00E9` is Latin-1's 0xE9, `U03B1` 0x10003B1).
    static func boundKeysym(_ scalar: Unicode.Scalar) -> UInt32 {
        let value = scalar.value
        return (0x20...0x7E).contains(value) || (0xA0...0xFF).contains(value) ? value : 0x0100_0000 + value
    }

    /// A few legacy keysyms layouts use for characters beyond Latin-1.
    static let legacy: [UInt32: UInt32] = [
        0x20AC: 0x20AC,  // EuroSign
        0x2014: 0xAA9, 0x2013: 0xAAA, 0x2026: 0xAAE, 0x201C: 0xAD2, 0x201D: 0xAD3, 0x2018: 0xAD0, 0x2019: 0xAD1,
        0x201E: 0xAFE, 0x201A: 0xAFD, 0x0153: 0x13BD, 0x0152: 0x13BC, 0x0178: 0x13BE,
    ]

    /// The characters of `text` the layout lacks, in order of first use (line breaks and tabs are keys).
    static func missing(_ text: String, in map: Map) -> [Unicode.Scalar] {
        var seen = Set<Unicode.Scalar>()
        return text.unicodeScalars.filter { scalar in
            guard scalar.value >= 0x20, scalar.value != 0x7F, !seen.contains(scalar) else { return false }
            seen.insert(scalar)
            return !keysyms(scalar).contains(where: map.present.contains)
        }
    }

    /// `text` cut into parts whose missing characters fit the spare keycodes (two each), with
    /// the bindings each part needs. One part with no bindings when nothing is missing.
    static func plan(_ text: String, map: Map) -> [(text: String, bindings: [Binding])] {
        let missingSet = Set(missing(text, in: map))
        let capacity = map.spare.count * 2
        var parts: [(text: String, bindings: [Binding])] = []
        var current = String.UnicodeScalarView()
        var needed: [Unicode.Scalar] = []
        func finish() {
            let pairs = stride(from: 0, to: needed.count, by: 2).map { Array(needed[$0..<min($0 + 2, needed.count)]) }
            parts.append((String(current), zip(map.spare, pairs).map { Binding(keycode: $0, scalars: $1) }))
            current = String.UnicodeScalarView()
            needed = []
        }
        for scalar in text.unicodeScalars {
            if missingSet.contains(scalar), !needed.contains(scalar) {
                if needed.count == capacity, capacity > 0 { finish() }
                needed.append(scalar)
            }
            current.append(scalar)
        }
        if !current.isEmpty || parts.isEmpty { finish() }
        return parts
    }

    /// xmodmap's expressions: `keycode 93 = U00E9 U00C9` (one character: both levels).
    static func expressions(_ bindings: [Binding]) -> [String] {
        bindings.flatMap { binding -> [String] in
            let names = binding.scalars.map { String(format: "U%04X", $0.value) }
            return ["-e", "keycode \(binding.keycode) = " + (names.count == 1 ? "\(names[0]) \(names[0])" : names.joined(separator: " "))]
        }
    }

    static func bind(_ bindings: [Binding]) throws(InsertionError) {
        guard !bindings.isEmpty else { return }
        try Programs.run("xmodmap", for: "typing on X11", expressions(bindings))
    }

    /// Gives the keycodes back their emptiness.
    static func unbind(_ bindings: [Binding]) throws(InsertionError) {
        guard !bindings.isEmpty else { return }
        try Programs.run("xmodmap", for: "typing on X11", bindings.flatMap { ["-e", "keycode \($0.keycode) ="] })
    }
}
