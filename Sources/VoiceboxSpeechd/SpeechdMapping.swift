import Glibc
import VoiceboxCore

/// Pure conversions from the service's request to speech-dispatcher's settings.
enum SpeechdMapping {
    /// speechd rate -100...100 from a factor 0.25...4: 50·log2(r) (so 0.25 → -100, 1 → 0, 4 → 100).
    static func rate(_ factor: Double) -> Int32 {
        scaled(factor, by: 50)
    }

    /// speechd pitch -100...100 from a factor 0.5...2: 100·log2(p) (so 0.5 → -100, 1 → 0, 2 → 100).
    static func pitch(_ factor: Double) -> Int32 {
        scaled(factor, by: 100)
    }

    /// speechd volume -100...100 from 0...1: 200·v − 100.
    static func volume(_ level: Double) -> Int32 {
        guard level.isFinite else { return 100 }
        return clamp((200 * level - 100).rounded())
    }

    /// The word of `SET SELF PRIORITY`.
    static func priority(_ priority: SpeechPriority) -> String {
        switch priority {
        case .message: "message"
        case .important: "important"
        case .text: "text"
        case .notification: "notification"
        case .progress: "progress"
        }
    }

    /// speech-dispatcher's own index marks (it inserts `__spd_…` marks to be able to resume after a
    /// pause); never reported to the service.
    static func isInternalMark(_ name: String) -> Bool {
        name.hasPrefix("__spd_")
    }

    private static func scaled(_ factor: Double, by scale: Double) -> Int32 {
        if factor.isNaN { return 0 }
        if factor <= 0 { return -100 }
        return clamp((scale * log2(factor)).rounded())
    }

    private static func clamp(_ value: Double) -> Int32 {
        Int32(min(100, max(-100, value)))
    }
}
