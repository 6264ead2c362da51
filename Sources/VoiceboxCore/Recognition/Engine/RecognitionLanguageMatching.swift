/// Which of a recognizer's languages answers a request.
public enum RecognitionLanguageMatching {
    /// The same tag (any case), else one of the same primary language ("en-GB" takes "en-US",
    /// "en" any English); nil when none. The rule the pocketsphinx model catalog follows too, so
    /// the service can name the model's language in its answer before the engine is asked.
    public static func best(for requested: String, among available: [String]) -> String? {
        let wanted = requested.lowercased()
        if let exact = available.first(where: { $0.lowercased() == wanted }) { return exact }
        guard let primary = LanguageTag.subtags(wanted).first else { return nil }
        return available.first { LanguageTag.subtags($0).first == primary }
    }
}
