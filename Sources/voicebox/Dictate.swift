import Foundation
import VoiceboxBus
import VoiceboxContract
import VoiceboxDictation
import VoiceboxInsertion

struct DictateRequest: Equatable {
    enum Mode: Equatable {
        /// Listen until the end of speech, print the text.
        case once
        /// The first press starts and waits; the next (another process) ends it.
        case toggle
        /// Push-to-talk: press starts and waits ...
        case start
        /// ... release (another process) ends it.
        case stop
        /// Aborts the dictation in progress: nothing is printed, the first exits 130.
        case cancel
    }

    /// Where the text goes.
    enum Destination: Equatable {
        /// type into the focused window in a graphical session, stdout outside one.
        case automatic
        case stdout
        case insert(InsertionMode)
    }

    var mode: Mode = .once
    /// Raw audio on standard input instead of the microphone (dictates once).
    var stdin: StdinAudio?
    var literal = false
    var language: String?
    var maxSeconds: Double?
    var output: Destination = .automatic
    var typer: Typer?
    var pasteKeys: PasteKeys?
    /// The start and end sounds.
    var cue = true
    /// `--verbose`: say on standard error which way the text goes, and why.
    var verbose = false
}

extension Invocation {
    static func parseDictate(_ reader: inout ArgumentReader) throws(UsageError) -> DictateRequest {
        var request = DictateRequest()
        var modeFlag: String?
        var stdin = StdinAudioFlags()
        while let item = reader.next() {
            if try stdin.parse(item, &reader) { continue }
            switch item {
            case .flag(let flag) where ["--toggle", "--start", "--stop", "--cancel"].contains(flag):
                if let modeFlag, modeFlag != flag { throw reader.error("\(modeFlag) and \(flag) cannot be used together") }
                modeFlag = flag
                request.mode = switch flag {
                case "--toggle": .toggle
                case "--start": .start
                case "--stop": .stop
                default: .cancel
                }
            case .flag("--literal"): request.literal = true
            case .flag("--language"): request.language = try reader.value(of: "--language")
            case .flag("--max-seconds"): request.maxSeconds = try reader.number(of: "--max-seconds", in: 0.1...86400)
            case .flag("--output"):
                let output = try reader.value(of: "--output")
                if output == "stdout" {
                    request.output = .stdout
                } else if let mode = InsertionMode(rawValue: output) {
                    request.output = .insert(mode)
                } else {
                    throw reader.error("--output takes type, paste, clipboard or stdout, not '\(output)'")
                }
            case .flag("--typer"): request.typer = try typer(&reader)
            case .flag("--paste-keys"): request.pasteKeys = try pasteKeys(&reader)
            case .flag("--no-cue"): request.cue = false
            case .flag("--verbose"): request.verbose = true
            case .flag(let flag): throw reader.unknown(flag)
            case .operand(let extra): throw reader.unexpected(extra)
            }
        }
        if case .insert(let mode) = request.output { try checkTyper(request.typer, mode: mode, &reader) }
        request.stdin = try stdin.audio(reader)
        if request.stdin != nil, let modeFlag {
            throw reader.error("--stdin dictates once, until the end of speech or of the input: not with \(modeFlag)")
        }
        return request
    }
}

extension DictateRequest {
    /// `--max-seconds`, or 30 s; 120 s when a key ends it.
    func maxSeconds(heldByKey: Bool) -> Double {
        maxSeconds ?? (heldByKey ? 120 : 30)
    }

    /// Recognize's options: the microphone, marked as a dictation (DictationID), in `--language`;
    /// or, with `--stdin`, standard input until the end of speech (shortcuts cannot end it: it
    /// holds no microphone, so it is no DictationID).
    /// `heldByKey`: another press ends it, so pauses (up to 10 s, the service's most) do not.
    func options(heldByKey: Bool, partialResults: Bool) throws(Failure) -> VarDict {
        var options = VarDict(["max_seconds": .double(maxSeconds(heldByKey: heldByKey)), "hint": .string("dictation")])
        if let stdin {
            for (key, value) in try stdin.options().entries { options[key] = value }
            options["silence_seconds"] = .double(1)
        } else {
            options["dictation"] = .boolean(true)
        }
        if heldByKey { options["silence_seconds"] = .double(10) }
        if let language { options["language"] = .string(language) }
        if partialResults { options["partial_results"] = .boolean(true) }
        return options
    }
}

extension Client {
    /// `dictate`: the microphone until the end of speech, written as dictation writes it (spoken
    /// punctuation, the user's replacements, capitals), typed into the focused window (or pasted,
    /// put on the clipboard, printed).
    /// The keyboard-shortcut modes find the dictation in progress through the service
    /// (DictationID: a recognition started with the option `dictation`, as this command starts
    /// its own) and end it with EndRecognition, whichever process started it. Another program's
    /// recognition is never ended: they say so and exit 5.
    func dictate(_ request: DictateRequest) async throws -> ExitStatus {
        switch request.mode {
        case .once:
            return try await listenAndWrite(request, heldByKey: false)
        case .start:
            // A key that repeats while held presses "start" again: the dictation running goes on.
            if let dictation = try? await microphone().dictation, dictation != 0 { return Self.alreadyDictating(dictation) }
            return try await listenAndWrite(request, heldByKey: true)
        case .toggle:
            let (dictation, listening) = try await microphone()
            if dictation != 0 {
                try await end(dictation, cancel: false)
                return .ok
            }
            if listening != 0 { throw Self.heldByAnother(listening) }
            return try await listenAndWrite(request, heldByKey: true)
        case .stop, .cancel:
            // A release right after the press may come before the first process is admitted: wait a little for it.
            var (dictation, listening) = try await microphone()
            for _ in 0..<10 where dictation == 0 && listening == 0 {
                try await Task.sleep(for: .milliseconds(50))
                (dictation, listening) = try await microphone()
            }
            if dictation != 0 {
                try await end(dictation, cancel: request.mode == .cancel)
            } else if listening != 0 {
                throw Self.heldByAnother(listening)
            }
            return .ok
        }
    }

    static func alreadyDictating(_ id: UInt64) -> ExitStatus {
        Output.error("a dictation is already running (\(id)): it goes on")
        return .ok
    }

    static func heldByAnother(_ id: UInt64) -> Failure {
        Failure("the microphone is held by another program's recognition (\(id)), not a dictation: left alone", .microphoneBusy)
    }

    /// DictationID and ListeningID.
    private func microphone() async throws(Failure) -> (dictation: UInt64, listening: UInt64) {
        try await checked { () async throws(DBusError) in
            (try await speech.get(Speech1.dictationID, timeout: .seconds(5)), try await speech.get(Speech1.listeningID, timeout: .seconds(5)))
        }
    }

    private func end(_ id: UInt64, cancel: Bool) async throws(Failure) {
        try await checked { () async throws(DBusError) in try await speech.call(Speech1.endRecognition, id, cancel) }
    }

    /// `heldByKey`: another press ends it, so pauses (up to 10 s, the service's most) do not.
    /// Where the text would be typed through IBus, the input method's compositions are watched
    /// from before listening: the typing waits for one begun meanwhile to end (CompositionWatch).
    private func listenAndWrite(_ request: DictateRequest, heldByKey: Bool) async throws -> ExitStatus {
        let types = request.output == .automatic || request.output == .insert(.type)
        let watch = types ? await CompositionWatch.start(typer: request.typer, environment: ProcessInfo.processInfo.environment,
                                                         onWait: { Output.error($0) }) : nil
        do {
            let status = try await listenThenWrite(request, heldByKey: heldByKey, watch: watch)
            await watch?.close()
            return status
        } catch {
            await watch?.close()
            throw error
        }
    }

    private func listenThenWrite(_ request: DictateRequest, heldByKey: Bool, watch: CompositionWatch?) async throws -> ExitStatus {
        let maxSeconds = request.maxSeconds(heldByKey: heldByKey)
        let options = try request.options(heldByKey: heldByKey, partialResults: Output.isTerminal)
        // Read before listening: a mistake in the file is told now, not after the words.
        let replacements = request.literal ? Replacements() : Replacements.load(ProcessInfo.processInfo.environment) { Output.error($0) }
        let reply: Speech1.RecognizeReply
        let cue = request.cue
        do throws(Failure) {
            // The start cue when the service has begun listening; nothing waits for it.
            var onStarted: (@Sendable () -> Void)?
            if cue { onStarted = { @Sendable in Cue.start.play() } }
            // A stream has no limit of its own (its writer may be slower than real time): a day.
            let timeout: Duration = request.stdin == nil ? .seconds(maxSeconds + 60) : .seconds(86400)
            reply = try await recognize(options, microphone: true, timeout: timeout, onStarted: onStarted)
        } catch {
            if cue { Cue.end.play() }
            // --cancel: no output at all.
            if error.status == .cancelled { throw Failure.quiet(.cancelled) }
            // Busy: another recognition has the microphone (a dictation started meanwhile: that one goes on).
            if error.status == .refused, let held = try? await microphone(), held.listening != 0 {
                if heldByKey, held.dictation != 0 { throw Failure.quiet(Self.alreadyDictating(held.dictation)) }
                throw Self.heldByAnother(held.listening)
            }
            throw error
        }
        if cue { Cue.end.play() }
        let text = DictatedText.render(reply.text, language: reply.details["language"]?.string ?? request.language,
                                       literal: request.literal, replacements: replacements)
        guard !text.isEmpty else {
            Output.error("nothing was heard")
            return .nothingHeard
        }
        switch request.output {
        case .stdout:
            Output.line(text)
            return .ok
        case .insert(let mode):
            return await Insertion.insert(text, mode: mode, typer: request.typer, pasteKeys: request.pasteKeys, verbose: request.verbose,
                                          watch: watch)
        case .automatic:
            // Typed in a graphical session; printed where there is none (a console, ssh).
            if DesktopSession.detect(ProcessInfo.processInfo.environment) == .none {
                Output.line(text)
                return .ok
            }
            return await Insertion.insert(text, mode: .type, typer: request.typer, pasteKeys: request.pasteKeys, verbose: request.verbose,
                                          watch: watch)
        }
    }
}
