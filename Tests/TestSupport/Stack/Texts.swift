/// Texts the tests speak and type.
enum Texts {
    /// Long enough to stop in the middle and hear that it really stopped.
    static let long = "This is a long sentence that keeps the speech engine busy for several seconds, "
        + "long enough for the test to stop it in the middle and to hear that it really stopped."
    static let sentence = "Café déjà vu — naïve façade, 100 % €"
    static let mixed = "Ελληνικά κόσμε, Привет мир, 日本語 😀 ± § © → ≠ ok"
    /// Accents, a dash, ideographs and a symbol in one line (typed through IBus on GNOME).
    static let greeting = "Grüße, naïve café — 東京 ✓"
}
