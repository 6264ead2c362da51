/// Decides when an utterance is over, from the recognizer's voice-activity flag per chunk of
/// audio. Pure logic: it never looks at samples or clocks, so it can be tested in microseconds.
public struct Endpointer: Sendable, Equatable {
    public enum Decision: Sendable, Equatable {
        /// Keep listening.
        case `continue`
        /// Speech was heard and then `silenceSeconds` of trailing silence.
        case endpoint
        /// `maxSeconds` of audio went by (with or without speech).
        case maxDuration
    }

    /// Trailing silence that ends an utterance. Note that pocketsphinx's detector already waits
    /// 0.5 s of quiet before it reports silence; this comes on top.
    public var silenceSeconds: Double
    /// The longest utterance, or nil for no limit.
    public var maxSeconds: Double?

    /// Whether any speech was heard since the start (or the last `reset`).
    public private(set) var heardSpeech = false
    // Durations add up in whole nanoseconds: summing 0.1 s ten times as Double gives 0.999...,
    // which would end the utterance one chunk late.
    private var elapsedNanos: Int64 = 0
    private var silenceNanos: Int64 = 0

    public init(silenceSeconds: Double = 1.0, maxSeconds: Double? = nil) {
        self.silenceSeconds = silenceSeconds
        self.maxSeconds = maxSeconds
    }

    /// Seconds of audio fed since the start (or the last `reset`).
    public var elapsedSeconds: Double { Double(elapsedNanos) / 1e9 }
    /// Seconds of silence since the last speech (0 before any speech).
    public var trailingSilenceSeconds: Double { Double(silenceNanos) / 1e9 }
    /// Speech was heard, and the detector has reported silence since.
    public var inPauseAfterSpeech: Bool { heardSpeech && silenceNanos > 0 }

    /// Feeds one chunk: whether the detector heard speech and how long the chunk lasted.
    /// Once it says `.endpoint` or `.maxDuration` it keeps saying so until `reset`.
    public mutating func feed(inSpeech: Bool, seconds: Double) -> Decision {
        let nanos = Self.nanos(seconds)
        elapsedNanos += nanos
        if inSpeech {
            heardSpeech = true
            silenceNanos = 0
        } else if heardSpeech {
            silenceNanos += nanos
        }
        return decision
    }

    /// The decision for what has been fed so far; an endpoint wins over a simultaneous limit.
    public var decision: Decision {
        if heardSpeech, silenceNanos > 0, silenceNanos >= Self.nanos(silenceSeconds) {
            return .endpoint
        }
        if let maxSeconds, elapsedNanos >= Self.nanos(maxSeconds) {
            return .maxDuration
        }
        return .continue
    }

    /// Starts over for the next utterance, keeping the settings.
    public mutating func reset() {
        heardSpeech = false
        elapsedNanos = 0
        silenceNanos = 0
    }

    private static func nanos(_ seconds: Double) -> Int64 {
        guard seconds > 0 else { return 0 }  // also NaN
        return Int64(min(seconds * 1e9, 9e18).rounded())  // 9e18 ns is 285 years: "never"
    }
}
