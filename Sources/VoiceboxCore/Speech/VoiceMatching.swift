import VoiceboxContract

/// Which voices answer a language request, best first.
public enum VoiceMatching {
    /// "" gives every voice; "en" every English voice; "en-GB" voices of that region only.
    /// Best first: the exact tag, then the plain language, then regional variants; within
    /// those the engine's default variant before its others, then by name.
    public static func voices(_ all: [Voice], for language: String) -> [Voice] {
        let wanted = LanguageTag.subtags(language)
        let keyed = keyed(all, wanted)
        // Every voice: the list itself when it is in order already (VoiceCache keeps it so),
        // sharing its storage instead of a copy (1 MiB for speech-dispatcher's 13,000 voices).
        if wanted.isEmpty, zip(keyed, keyed.dropFirst()).allSatisfy({ !($1.key < $0.key) }) { return all }
        return keyed.sorted { $0.key < $1.key }.map(\.voice)
    }

    /// The voice to use for a language: its best match, falling back to the plain language
    /// ("en-NZ" with no New Zealand voice speaks with an English one). nil if none.
    public static func best(_ all: [Voice], for language: String) -> Voice? {
        if let exact = voices(all, for: language).first { return exact }
        guard let plain = plainLanguage(of: language) else { return nil }
        return voices(all, for: plain).first
    }

    /// The language without its region or script ("en" for "en-NZ"); nil when that is all it is.
    static func plainLanguage(of language: String) -> String? {
        let subtags = LanguageTag.subtags(language)
        return subtags.count > 1 ? subtags[0] : nil
    }

    /// The voices of the wanted language, each with its key made once, not at every comparison:
    /// sorting speech-dispatcher's 13,000 voices compares 170,000 pairs, and splitting both tags
    /// at each took a core for seconds (under the thread sanitizer) at every listing.
    private static func keyed(_ all: [Voice], _ wanted: [String]) -> [(key: (Int, Int, String), voice: Voice)] {
        all.compactMap { voice in
            let have = LanguageTag.subtags(voice.language)
            guard have.count >= wanted.count, have.prefix(wanted.count).elementsEqual(wanted) else { return nil }
            return (key(have, voice, wanted), voice)
        }
    }

    /// Closeness to the wanted tag, then the engine's default variant before its others, then the id.
    private static func key(_ have: [String], _ voice: Voice, _ wanted: [String]) -> (Int, Int, String) {
        let closeness = have == wanted ? 0 : have.count == 1 ? 1 : 2
        let variant = ["", "none", "default"].contains(voice.variant.lowercased()) ? 0 : 1
        return (closeness, variant, voice.id)
    }
}
