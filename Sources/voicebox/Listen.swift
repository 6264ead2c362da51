import Foundation
import VoiceboxBus
import VoiceboxInterface

extension StdinAudio {
    /// Recognize's stream options: standard input is passed as `stream` (libdbus sends a
    /// duplicate, so ours stays open).
    func options() throws(Failure) -> VarDict {
        guard isatty(0) == 0 else {
            throw Failure("--stdin reads raw audio from a pipe (e.g. parec --raw ... | voicebox listen --stdin), "
                          + "not from a terminal", .usage)
        }
        return VarDict(["stream": .unixFD(0), "stream_format": .string(format), "stream_rate": .uint32(rate),
                        "stream_channels": .uint32(channels)])
    }
}

extension ListenRequest {
    /// Recognize's options; reads the grammar file. The audio file is not opened here
    /// (`openFile`), so the options can be checked without one.
    func options(partialResults: Bool) throws(Failure) -> VarDict {
        var options = VarDict()
        if let grammarFile { options["grammar"] = .string(try Files.text(grammarFile)) }
        if !keyphrases.isEmpty { options["keyphrases"] = .stringArray(keyphrases) }
        if let language { options["language"] = .string(language) }
        if let maxSeconds { options["max_seconds"] = .double(maxSeconds) }
        if let silenceSeconds { options["silence_seconds"] = .double(silenceSeconds) }
        if partialResults { options["partial_results"] = .boolean(true) }
        return options
    }
}

extension Client {
    /// `listen`: the text heard (or JSON); exits 2 when nothing was heard.
    func listen(_ request: ListenRequest) async throws -> ExitStatus {
        var options = try request.options(partialResults: request.partial && Output.isTerminal && request.file == nil)
        if let stdin = request.stdin {
            for (key, value) in try stdin.options().entries { options[key] = value }
        }
        if let file = request.file {
            // Opened here and passed open: names that are not UTF-8 work, and it is what a
            // sandboxed caller must do anyway. libdbus sends a duplicate; ours is closed after the call.
            var fd = try Files.open(file)
            if Files.isHeaderless(file) {
                let original = fd
                defer { close(original) }
                fd = try Files.withWAVHeader(original, name: file.text)
            }
            options["fd"] = .unixFD(fd)
        }
        defer { if case .unixFD(let fd)? = options["fd"] { close(fd) } }
        // A file or a stream has no limit of its own: give it a day.
        let timeout: Duration = request.file == nil && request.stdin == nil ? .seconds((request.maxSeconds ?? 30) + 60) : .seconds(86400)
        let reply = try await recognize(options, microphone: request.file == nil, timeout: timeout)
        if request.json {
            Output.json(Self.json(reply))
        } else if !reply.text.isEmpty {
            Output.line(reply.text)
        }
        guard !reply.text.isEmpty else {
            if !request.json { Output.error("nothing was heard") }
            return .nothingHeard
        }
        return .ok
    }

    /// {text, id, confidence, duration, reason, language, words: [{word, start, end}]}.
    static func json(_ reply: RecognizeReply) -> [String: Any] {
        var object: [String: Any] = ["text": reply.text]
        for (key, value) in reply.details.entries where key != "words" { object[key] = Output.jsonValue(value) }
        object["words"] = (reply.details["words"]?.unwrapped.arrayElements ?? []).compactMap { element -> [String: Any]? in
            guard case .structure(let fields) = element, fields.count == 3 else { return nil }
            return ["word": fields[0].string ?? "", "start": fields[1].double ?? 0, "end": fields[2].double ?? 0]
        }
        return object
    }
}
