/// What module-role-cork was loaded with, read from its argument string as `pactl list modules`
/// shows it (e.g. `trigger_roles=phone,a11y cork_roles="music,video" global=true`).
///
/// Pure parsing, following PulseAudio's own module-argument rules (pulsecore/modargs.c):
/// whitespace-separated `key=value` pairs; a value may be single- or double-quoted; a backslash
/// takes the next character literally. A role list is comma-separated (the module splits on ","
/// only; we also drop surrounding blanks and empty entries, which match no stream anyway).
struct RoleCorkArguments: Equatable, Sendable {
    /// The module's own defaults (module-role-cork.c), used for arguments not given.
    static let defaultTriggers = ["phone"]
    static let defaultTargets = ["music", "video"]

    var triggerRoles: [String]
    var corkRoles: [String]
    /// Cork streams on every sink, not only on the trigger's own sink.
    var global: Bool

    init(triggerRoles: [String] = Self.defaultTriggers, corkRoles: [String] = Self.defaultTargets, global: Bool = false) {
        self.triggerRoles = triggerRoles
        self.corkRoles = corkRoles
        self.global = global
    }

    /// nil or empty: the module was loaded without arguments, so its defaults apply.
    init(parsing argument: String?) {
        let pairs = Self.keyValues(argument ?? "")
        self.init()
        if let value = pairs["trigger_roles"] { triggerRoles = Self.roles(value) }
        if let value = pairs["cork_roles"] { corkRoles = Self.roles(value) }
        if let value = pairs["global"] { global = Self.boolean(value) ?? false }
    }

    static func roles(_ list: String) -> [String] {
        list.split(separator: ",").map { $0.trimmingBlanks() }.filter { !$0.isEmpty }
    }

    /// pa_parse_boolean's words; nil for anything else (the module then refuses to load).
    static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "1", "y", "yes", "t", "true", "on": return true
        case "0", "n", "no", "f", "false", "off": return false
        default: return nil
        }
    }

    /// `key=value` pairs; the last of a repeated key wins. A word without "=" is skipped.
    static func keyValues(_ text: String) -> [String: String] {
        var pairs: [String: String] = [:]
        var characters = Array(text)[...]
        while true {
            while let first = characters.first, first.isWhitespace { characters.removeFirst() }
            guard !characters.isEmpty else { return pairs }
            var key = ""
            while let next = characters.first, next != "=", !next.isWhitespace {
                key.append(next)
                characters.removeFirst()
            }
            guard characters.first == "=" else { continue }  // a bare word
            characters.removeFirst()
            pairs[key] = value(from: &characters)
        }
    }

    /// Reads one value: quoted up to its closing quote, or bare up to the next blank.
    private static func value(from characters: inout ArraySlice<Character>) -> String {
        var quote: Character?
        if let first = characters.first, first == "\"" || first == "'" {
            quote = first
            characters.removeFirst()
        }
        var value = ""
        while let next = characters.popFirst() {
            if next == "\\" {
                if let escaped = characters.popFirst() { value.append(escaped) }
            } else if let quote, next == quote {
                break
            } else if quote == nil, next.isWhitespace {
                break
            } else {
                value.append(next)
            }
        }
        return value
    }
}

extension Substring {
    func trimmingBlanks() -> String {
        String(drop { $0.isWhitespace }.reversed().drop { $0.isWhitespace }.reversed())
    }
}
