import VoiceboxCore

/// The synthesizer's bounds (the `speechd-*` entries of `Bounds`), read once when it is made: in
/// seconds where Dispatch takes seconds, as durations where `Spawn` and `ForeignProcess` take them.
/// What each bounds, and why it is that long, is said where it is used.
struct SpeechdTimings: Sendable, Equatable {
    /// speech-dispatcher's answer to any command (SSIPConnection's timeout).
    let reply: Double
    /// The same on the voice-listing connection (VoiceLister).
    let list: Double
    /// speak()'s wait for the 225 (SpeechdCore+Submitting).
    let accept: Double
    /// The stall watchdog's first wait, and its longest (SpeechdCore+Watchdog).
    let begin: Double
    let stallLimit: Double
    /// How often a busy connection is checked (SpeechdCore+Heartbeat).
    let heartbeat: Double
    /// Reconnection backoff: first pause and longest (SpeechdCore+Connecting).
    let reconnectFirst: Double
    let reconnectLimit: Double
    /// speak() while unreachable tries at once if the last attempt is older than this.
    let eagerRetry: Double
    /// Restart backoff: first pause, longest, and the time up after which it starts over (SpeechdCore+Recovery).
    let restartFirst: Double
    let restartLimit: Double
    let restartReset: Double
    /// A started server's launcher to return (SpeechdSpawner, SpeechdServerProcess.relaunch).
    let start: Duration
    /// A wedged server's exit after TERM, and every process of it to be gone after KILL (SpeechdServerProcess.stop).
    let stopGrace: Duration
    let exit: Duration

    init(_ bounds: Bounds) {
        reply = bounds[.speechdReply].inSeconds
        list = bounds[.speechdList].inSeconds
        accept = bounds[.speechdAccept].inSeconds
        begin = bounds[.speechdBegin].inSeconds
        stallLimit = bounds[.speechdStallLimit].inSeconds
        heartbeat = bounds[.speechdHeartbeat].inSeconds
        reconnectFirst = bounds[.speechdReconnectFirst].inSeconds
        reconnectLimit = bounds[.speechdReconnectLimit].inSeconds
        eagerRetry = bounds[.speechdEagerRetry].inSeconds
        restartFirst = bounds[.speechdRestartFirst].inSeconds
        restartLimit = bounds[.speechdRestartLimit].inSeconds
        restartReset = bounds[.speechdRestartReset].inSeconds
        start = bounds[.speechdStart]
        stopGrace = bounds[.speechdStopGrace]
        exit = bounds[.speechdExit]
    }

    /// "2 s", "0.3 s": how a bound is named in what the synthesizer says.
    static func text(_ seconds: Double) -> String {
        seconds == seconds.rounded() ? "\(Int(seconds)) s" : "\(seconds) s"
    }
}
