import Foundation
import VoiceboxBus
import VoiceboxContract
import VoiceboxThreads

/// What listen and dictate share: one Recognize call with its live display on a terminal (a
/// level meter and the partial text for the microphone, a progress bar for a file), cleared
/// before the result is printed; off a terminal nothing but the result.
final class RecognitionDisplay: Sendable {
    private struct State {
        var id: UInt64?
        var level = 0.0
        var partial = ""
    }

    let line: LiveLine
    private let microphone: Bool
    private let state = Locked(State())

    init(microphone: Bool, line: LiveLine = LiveLine()) {
        self.microphone = microphone
        self.line = line
    }

    /// Only the first recognition that starts once we have subscribed is ours to show (the
    /// microphone's is the only one that sends AudioLevel).
    private func ours(_ id: UInt64) -> Bool {
        state.withLock { state in
            if state.id == nil { state.id = id }
            return state.id == id
        }
    }

    /// The microphone is open from RecognitionStarted on, also while the model still loads (the
    /// first AudioLevel comes only once it has): the user may speak.
    func started(_ id: UInt64) {
        guard ours(id) else { return }
        line.show(microphone ? "listening \(LiveLine.bar(0, width: 20))" : "decoding \(LiveLine.bar(0))   0%")
    }

    func level(_ id: UInt64, _ level: Double) {
        guard ours(id) else { return }
        let partial = state.withLock { state in
            state.level = level
            return state.partial
        }
        line.show("listening \(LiveLine.bar(level, width: 20)) \(partial)")
    }

    func partial(_ id: UInt64, _ text: String) {
        guard microphone, state.withLock({ $0.id == id }) else { return }
        let level = state.withLock { state in
            state.partial = text
            return state.level
        }
        line.show("listening \(LiveLine.bar(level, width: 20)) \(text)")
    }

    func progress(_ id: UInt64, _ fraction: Double) {
        guard ours(id) else { return }
        let percent = String(format: "%3d%%", Int((min(max(fraction, 0), 1) * 100).rounded()))
        line.show("decoding \(LiveLine.bar(fraction)) \(percent)")
    }
}

extension Client {
    /// Recognize with `options`; Ctrl-C clears the display and exits 130 (leaving the bus
    /// cancels the recognition and frees the microphone at once).
    /// `onStarted` is called once, when the service announces a recognition (RecognitionStarted).
    func recognize(_ options: VarDict, microphone: Bool, timeout: Duration,
                   onStarted: (@Sendable () -> Void)? = nil) async throws(Failure) -> Speech1.RecognizeReply {
        let speech = speech
        let display = RecognitionDisplay(microphone: microphone)
        Interrupts.onInterrupt { _ in
            display.line.clear()
            exit(ExitStatus.cancelled.rawValue)
        }
        var tokens: [UInt64] = []
        if Output.isTerminal {
            tokens = try await checked { () async throws(DBusError) in
                if microphone {
                    display.line.show("starting...")
                    return [
                        try await speech.subscribe(Speech1.recognitionStarted) { id in display.started(id) },
                        try await speech.subscribe(Speech1.audioLevel) { id, level in display.level(id, level) },
                        try await speech.subscribe(Speech1.recognitionPartial) { id, text in display.partial(id, text) },
                    ]
                }
                return [
                    try await speech.subscribe(Speech1.recognitionStarted) { id in display.started(id) },
                    try await speech.subscribe(Speech1.recognitionProgress) { id, fraction in display.progress(id, fraction) },
                ]
            }
        }
        if let onStarted {
            let once = Locked(false)
            tokens.append(try await checked { () async throws(DBusError) in
                try await speech.subscribe(Speech1.recognitionStarted) { _ in
                    if once.withLock({ fired in defer { fired = true }; return !fired }) { onStarted() }
                }
            })
        }
        defer {
            for token in tokens { connection.unsubscribe(token) }
            display.line.clear()
        }
        return try await checked { () async throws(DBusError) in
            try await speech.call(Speech1.recognize, options, timeout: timeout)
        }
    }
}
