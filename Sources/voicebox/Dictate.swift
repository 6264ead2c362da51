import Foundation
import VoiceboxBus
import VoiceboxDictation
import VoiceboxInsertion
import VoiceboxInterface

extension Client {
    /// `dictate`: the microphone until the end of speech, with spoken punctuation, typed into the
    /// focused window (or pasted, put on the clipboard, printed).
    /// The keyboard-shortcut modes find the dictation in progress through the service
    /// (ListeningID) and end it with EndRecognition, whichever process started it.
    func dictate(_ request: DictateRequest) async throws -> ExitStatus {
        switch request.mode {
        case .once:
            return try await listenAndPrint(request, heldByKey: false)
        case .start:
            return try await listenAndPrint(request, heldByKey: true)
        case .toggle:
            let id = try await listeningID()
            guard id == 0 else {
                try await end(id, cancel: false)
                return .ok
            }
            return try await listenAndPrint(request, heldByKey: true)
        case .stop, .cancel:
            // A release right after the press may come before the first process is admitted: wait a little for it.
            var id = try await listeningID()
            for _ in 0..<10 where id == 0 {
                try await Task.sleep(for: .milliseconds(50))
                id = try await listeningID()
            }
            if id != 0 { try await end(id, cancel: request.mode == .cancel) }
            return .ok
        }
    }

    private func listeningID() async throws(Failure) -> UInt64 {
        try await checked { () async throws(DBusError) in try await speech.get(Speech1.listeningID, timeout: .seconds(5)) }
    }

    private func end(_ id: UInt64, cancel: Bool) async throws(Failure) {
        try await checked { () async throws(DBusError) in try await speech.call(Speech1.endRecognition, id, cancel) }
    }

    /// `heldByKey`: another press ends it, so pauses (up to 10 s, the service's most) do not.
    private func listenAndPrint(_ request: DictateRequest, heldByKey: Bool) async throws -> ExitStatus {
        let maxSeconds = request.maxSeconds ?? (heldByKey ? 120 : 30)
        var options = VarDict(["max_seconds": .double(maxSeconds), "hint": .string("dictation")])
        if heldByKey { options["silence_seconds"] = .double(10) }
        if let language = request.language { options["language"] = .string(language) }
        if Output.isTerminal { options["partial_results"] = .boolean(true) }
        let reply: RecognizeReply
        let cue = request.cue
        do throws(Failure) {
            // The start cue when the service has begun listening; nothing waits for it.
            var onStarted: (@Sendable () -> Void)?
            if cue { onStarted = { @Sendable in Cue.start.play() } }
            reply = try await recognize(options, microphone: true, timeout: .seconds(maxSeconds + 60), onStarted: onStarted)
        } catch {
            if cue { Cue.end.play() }
            // --cancel: no output at all.
            throw error.status == .cancelled ? Failure.quiet(.cancelled) : error
        }
        if cue { Cue.end.play() }
        let text = SpokenPunctuation.apply(reply.text, literal: request.literal)
        guard !text.isEmpty else {
            Output.error("nothing was heard")
            return .nothingHeard
        }
        switch request.output {
        case .stdout:
            Output.line(text)
        case .insert(let mode):
            try Insertion.insert(text, mode: mode, typer: request.typer)
        case .automatic:
            // Typed in a graphical session; printed where there is none (a console, ssh).
            if Session.detect(ProcessInfo.processInfo.environment) == .none {
                Output.line(text)
            } else {
                try Insertion.insert(text, mode: .type, typer: request.typer)
            }
        }
        return .ok
    }
}
