import Foundation
import VoiceboxBus
import VoiceboxContract

struct SayRequest: Equatable {
    var text = ""
    /// `say -`: the text is standard input.
    var fromStandardInput = false
    var voice: String?
    var language: String?
    var rate: Double?
    var pitch: Double?
    var volume: Double?
    var priority: String?
    var ssml = false
    var wait = true
    var json = false
    /// `--output FILE|-`: a WAV file written instead of playing (`-`: standard output).
    var output: String?
}

extension Invocation {
    static func parseSay(_ reader: inout ArgumentReader) throws(UsageError) -> SayRequest {
        var request = SayRequest()
        var words: [String] = []
        while let item = reader.next() {
            switch item {
            case .operand(let word): words.append(word)
            case .flag("--voice"): request.voice = try reader.value(of: "--voice")
            case .flag("--language"): request.language = try reader.value(of: "--language")
            case .flag("--rate"): request.rate = try reader.number(of: "--rate")
            case .flag("--pitch"): request.pitch = try reader.number(of: "--pitch")
            case .flag("--volume"): request.volume = try reader.number(of: "--volume")
            case .flag("--priority"):
                let priority = try reader.value(of: "--priority")
                let known = ["message", "important", "text", "notification", "progress"]
                guard known.contains(priority) else {
                    throw reader.error("--priority takes \(known.joined(separator: ", ")), not '\(priority)'")
                }
                request.priority = priority
            case .flag("--ssml"): request.ssml = true
            case .flag("--no-wait"): request.wait = false
            case .flag("--json"): request.json = true
            case .flag("--output"): request.output = try reader.value(of: "--output")
            case .flag(let flag): throw reader.unknown(flag)
            }
        }
        guard !words.isEmpty else { throw reader.error("say needs some text") }
        if request.output == "-" && (request.json || !request.wait) {
            throw reader.error("--output - writes the audio to standard output: not with --json or --no-wait")
        }
        if words == ["-"] {
            request.fromStandardInput = true
        } else {
            request.text = words.joined(separator: " ")
        }
        return request
    }
}

extension SayRequest {
    /// Speak's options.
    var options: VarDict {
        var options = VarDict(["wait": .boolean(wait)])
        if let voice { options["voice"] = .string(voice) }
        if let language { options["language"] = .string(language) }
        if let rate { options["rate"] = .double(rate) }
        if let pitch { options["pitch"] = .double(pitch) }
        if let volume { options["volume"] = .double(volume) }
        if let priority { options["priority"] = .string(priority) }
        if ssml { options["ssml"] = .boolean(true) }
        return options
    }

    /// The utterances to speak: the text, split at sentence ends when it is longer than Speak
    /// takes (SSML is never split: its markup would break, so the service refuses it as too large).
    func utterances(_ text: String) -> [String] {
        ssml || output != nil ? [text] : LongText.split(text)  // one WAV file holds one utterance
    }
}

extension Client {
    /// `say`: speaks and (unless --no-wait) waits until spoken. Ctrl-C meanwhile leaves the bus,
    /// which cancels speech the service was waiting on for us. Long text is several utterances:
    /// with waiting each is queued when the one before has been spoken (so Ctrl-C cancels what is
    /// left, and nothing of it is queued), and `say` returns after the last.
    func say(_ request: SayRequest) async throws -> ExitStatus {
        let text = request.fromStandardInput ? try Self.standardInput() : request.text
        var options = request.options
        let output = try request.output.map(Self.openOutput)
        if let output { options["output"] = .unixFD(output.fd) }
        defer { if let output, output.fd != 1 { close(output.fd) } }
        if request.wait {
            let unfinished = output?.unfinished
            Interrupts.onInterrupt { _ in
                if let unfinished { unlink(unfinished) }
                exit(ExitStatus.cancelled.rawValue)
            }
        }
        var ids: [UInt64] = []
        do {
            for utterance in request.utterances(text) {
                ids.append(try await checked { () async throws(DBusError) in
                    try await speech.call(Speech1.speak, utterance, options, timeout: .seconds(3600))
                })
            }
        } catch {
            if let unfinished = output?.unfinished { unlink(unfinished) }
            throw error
        }
        // Only now does the file take its name: a refused request leaves a file there untouched.
        if let output, let unfinished = output.unfinished, rename(unfinished, output.path) != 0 {
            let why = String(cString: strerror(errno))
            unlink(unfinished)
            throw Failure("cannot write \(output.path): \(why)", .usage)
        }
        if request.json {
            Output.json(["id": ids.last ?? 0, "ids": ids])
        } else if !request.wait {
            for id in ids { Output.line(String(id)) }
        }
        return .ok
    }

    /// `--output`'s descriptor; `unfinished`, where a regular file is written until it is renamed
    /// to `path` (beside it, so that the rename is atomic).
    struct OutputFile {
        let path: String
        let fd: Int32
        let unfinished: String?
    }

    /// `--output`: a new file beside `path`, which takes its name once the speech was accepted
    /// (`-`: standard output, which must not be a terminal; a pipe or device by name: itself).
    static func openOutput(_ path: String) throws(Failure) -> OutputFile {
        if path == "-" {
            guard isatty(1) == 0 else { throw Failure("--output -: standard output is a terminal; redirect it to a file or a pipe", .usage) }
            return OutputFile(path: path, fd: 1, unfinished: nil)
        }
        var status = stat()
        let exists = stat(path, &status) == 0
        if exists, status.st_mode & S_IFMT != S_IFREG {
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw Failure("cannot write \(path): \(String(cString: strerror(errno)))", .usage) }
            return OutputFile(path: path, fd: fd, unfinished: nil)
        }
        // A symbolic link: the file it names is replaced, not the link.
        var path = path
        if exists, let resolved = realpath(path, nil) {
            path = String(cString: resolved)
            free(resolved)
        }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        let unfinished = "\(directory).\(name).voicebox-\(getpid())"
        let fd = open(unfinished, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Failure("cannot write \(path): \(String(cString: strerror(errno)))", .usage) }
        if exists { _ = fchmod(fd, status.st_mode & 0o7777) }  // the file it replaces keeps its permissions
        return OutputFile(path: path, fd: fd, unfinished: unfinished)
    }

    /// `say -`: all of standard input, as UTF-8.
    static func standardInput() throws(Failure) -> String {
        var data: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = read(0, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw Failure("cannot read standard input: \(String(cString: strerror(errno)))", .usage) }
            if count == 0 { break }
            data.append(contentsOf: chunk[0..<count])
        }
        let text = String(decoding: data, as: UTF8.self)
        guard !text.allSatisfy(\.isWhitespace) else { throw Failure("nothing to say: standard input was empty", .usage) }
        return text
    }
}
