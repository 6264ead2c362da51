/// Which voices answer a language request, best first.
public enum VoiceMatching {
    /// "" gives every voice; "en" every English voice; "en-GB" voices of that region only.
    /// Best first: the exact tag, then the plain language, then regional variants; within
    /// those the engine's default variant before its others, then by name.
    public static func voices(_ all: [Voice], for language: String) -> [Voice] {
        let wanted = LanguageTag.subtags(language)
        guard !wanted.isEmpty else {
            // Every voice: the list itself when it is in order already (VoiceCache keeps it so),
            // sharing its storage instead of a copy (1 MiB for speech-dispatcher's 13,000 voices).
            let inOrder = order(wanted)
            return zip(all, all.dropFirst()).allSatisfy { !inOrder($1, $0) } ? all : all.sorted(by: inOrder)
        }
        return all.filter { voice in
            let have = LanguageTag.subtags(voice.language)
            return have.count >= wanted.count && Array(have.prefix(wanted.count)) == wanted
        }.sorted(by: order(wanted))
    }

    /// The voice to use for a language: its best match, falling back to the plain language
    /// ("en-NZ" with no New Zealand voice speaks with an English one). nil if none.
    public static func best(_ all: [Voice], for language: String) -> Voice? {
        if let exact = voices(all, for: language).first { return exact }
        guard let primary = LanguageTag.subtags(language).first else { return nil }
        return voices(all, for: primary).first
    }

    private static func order(_ wanted: [String]) -> (Voice, Voice) -> Bool {
        { a, b in
            let ka = key(a, wanted), kb = key(b, wanted)
            return ka.0 != kb.0 ? ka.0 < kb.0 : ka.1 != kb.1 ? ka.1 < kb.1 : ka.2 < kb.2
        }
    }

    private static func key(_ voice: Voice, _ wanted: [String]) -> (Int, Int, String) {
        let have = LanguageTag.subtags(voice.language)
        let closeness = have == wanted ? 0 : have.count == 1 ? 1 : 2
        let variant = ["", "none", "default"].contains(voice.variant.lowercased()) ? 0 : 1
        return (closeness, variant, voice.id)
    }
}
