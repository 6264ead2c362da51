/// The answers `RecognitionHint.confirmation` listens for, and what they mean.
public enum Confirmation {
    public static let affirmative = ["yes", "yeah", "yep", "sure", "correct", "right", "okay",
                                     "affirmative", "confirm"]
    // Not "nah": the en-US model hears it in most spoken "no"s.
    public static let negative = ["no", "nope", "wrong", "cancel", "stop", "negative"]

    /// true for a yes, false for a no, nil when the text holds neither or both.
    public static func interpret(_ text: String) -> Bool? {
        let words = Set(text.lowercased().split(separator: " ").map(String.init))
        let yes = !words.isDisjoint(with: affirmative)
        let no = !words.isDisjoint(with: negative)
        return yes == no ? nil : yes
    }
}
