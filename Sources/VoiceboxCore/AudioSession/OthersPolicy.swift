/// What Voicebox does to other audio while it speaks or listens: the `others` option.
public enum OthersPolicy: String, Sendable, CaseIterable, Comparable, Codable {
    /// Leave other audio alone.
    case mix
    /// Lower other streams' volume, then restore it.
    case duck
    /// Pause media players and silence other streams, then resume them.
    case pause

    private var strength: Int {
        switch self {
        case .mix: 0
        case .duck: 1
        case .pause: 2
        }
    }

    public static func < (a: OthersPolicy, b: OthersPolicy) -> Bool { a.strength < b.strength }
}
