import Foundation
import VoiceboxBus
import VoiceboxContract

struct ListenRequest: Equatable {
    /// An audio file, as given (the client opens it and passes it open), or nil for the microphone.
    var file: Argument?
    /// Raw audio on standard input instead of the microphone or a file.
    var stdin: StdinAudio?
    /// A JSGF grammar file (its text is sent).
    var grammarFile: Argument?
    var keyphrases: [String] = []
    var language: String?
    var maxSeconds: Double?
    /// Trailing silence that ends it (the microphone's, or with --stdin: then it ends at the end of speech).
    var silenceSeconds: Double?
    var partial = false
    var json = false
}

extension Invocation {
    static func parseListen(_ reader: inout ArgumentReader) throws(UsageError) -> ListenRequest {
        var request = ListenRequest()
        var stdin = StdinAudioFlags()
        while let item = reader.next() {
            if try stdin.parse(item, &reader) { continue }
            switch item {
            case .flag("--file"): request.file = try reader.argument(of: "--file")
            case .flag("--grammar"): request.grammarFile = try reader.argument(of: "--grammar")
            case .flag("--keyphrase"): request.keyphrases.append(try reader.value(of: "--keyphrase"))
            case .flag("--language"): request.language = try reader.value(of: "--language")
            case .flag("--max-seconds"): request.maxSeconds = try reader.number(of: "--max-seconds", in: 0.1...86400)
            case .flag("--silence-seconds"): request.silenceSeconds = try reader.number(of: "--silence-seconds", in: 0...10)
            case .flag("--partial"): request.partial = true
            case .flag("--json"): request.json = true
            case .flag(let flag): throw reader.unknown(flag)
            case .operand(let extra): throw reader.unexpected(extra)
            }
        }
        if request.grammarFile != nil, !request.keyphrases.isEmpty {
            throw reader.error("--grammar and --keyphrase cannot be used together")
        }
        if request.file != nil, request.silenceSeconds != nil {
            throw reader.error("--silence-seconds applies to the microphone and --stdin, not to a file")
        }
        request.stdin = try stdin.audio(reader)
        if request.stdin != nil, request.file != nil { throw reader.error("--stdin and --file cannot be used together") }
        return request
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
    static func json(_ reply: Speech1.RecognizeReply) -> [String: Any] {
        var object: [String: Any] = ["text": reply.text]
        for (key, value) in reply.details.entries where key != "words" { object[key] = Output.jsonValue(value) }
        object["words"] = (reply.details["words"]?.unwrapped.arrayElements ?? []).compactMap { element -> [String: Any]? in
            guard case .structure(let fields) = element, fields.count == 3 else { return nil }
            return ["word": fields[0].string ?? "", "start": fields[1].double ?? 0, "end": fields[2].double ?? 0]
        }
        return object
    }
}
