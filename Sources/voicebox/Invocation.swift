import VoiceboxCore
import VoiceboxInsertion

/// What the command line asks for, parsed without touching the bus (so it is unit-tested).
struct Invocation: Equatable {
    /// `--address BUS`: a bus other than the session bus.
    var address: String?
    var command: Command
}

enum Command: Equatable {
    /// `--help` for the command (nil) or a subcommand.
    case help(String?)
    /// `--version`.
    case version
    case say(SayRequest)
    case voices(language: String, json: Bool)
    case listen(ListenRequest)
    case stop(StopTarget)
    case pause
    case resume
    case status(json: Bool)
    case monitor
    case dictate(DictateRequest)
    case insert(InsertRequest)
}

/// `insert TEXT`: into the focused window, as dictate does.
struct InsertRequest: Equatable {
    var text = ""
    var mode: InsertionMode = .type
    var typer: Typer?
    var pasteKeys: PasteKeys?
}

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
}

extension Invocation {
    /// listen --stdin or dictate --stdin.
    var readsStandardInput: Bool {
        switch command {
        case .listen(let request): request.stdin != nil
        case .dictate(let request): request.stdin != nil
        default: false
        }
    }
}

/// `--stdin`: raw PCM on standard input, streamed to the service as it comes.
struct StdinAudio: Equatable {
    var format = "s16le"
    var rate: UInt32 = 16_000
    var channels: UInt32 = 1

    /// `--format`, `--rate`, `--channels`: true when `item` was one of them.
    mutating func parse(_ item: ArgumentReader.Item, _ reader: inout ArgumentReader) throws(UsageError) -> Bool {
        switch item {
        case .flag("--format"):
            format = try reader.value(of: "--format")
            guard ["s16le", "f32le"].contains(format) else { throw reader.error("--format takes s16le or f32le, not '\(format)'") }
        case .flag("--rate"): rate = try Self.whole(try reader.number(of: "--rate", in: 8_000...48_000), "--rate", reader)
        case .flag("--channels"): channels = try Self.whole(try reader.number(of: "--channels", in: 1...8), "--channels", reader)
        default: return false
        }
        return true
    }

    private static func whole(_ number: Double, _ flag: String, _ reader: ArgumentReader) throws(UsageError) -> UInt32 {
        guard number == number.rounded() else {
            throw reader.error("\(flag) takes a whole number, not '\(number.formatted(.number.grouping(.never)))'")
        }
        return UInt32(number)
    }

    static func wrongWithout(_ item: ArgumentReader.Item) -> String? {
        if case .flag(let flag) = item, ["--format", "--rate", "--channels"].contains(flag) { return "\(flag) describes --stdin, which is missing" }
        return nil
    }
}

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

enum StopTarget: Equatable {
    /// What this client queued (nothing, from a new process: kept for scripts).
    case mine
    case utterance(UInt64)
    case all
}

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
}

extension Invocation {
    static let subcommands = ["say", "voices", "listen", "stop", "pause", "resume", "status", "monitor", "dictate", "insert"]

    /// The client's version (the service's is its Version property).
    static let version = SpeechService.version

    /// Parses the arguments after the program's name.
    static func parse(_ arguments: [String]) throws(UsageError) -> Invocation {
        try parse(arguments: arguments.map(Argument.init))
    }

    /// Parses the arguments after the program's name, with their bytes (file names).
    static func parse(arguments all: [Argument]) throws(UsageError) -> Invocation {
        let arguments = all.map(\.text)
        var rest = arguments[...]
        var address: String?
        while let first = rest.first, first.hasPrefix("-") {
            rest.removeFirst()
            switch first {
            case "--help", "-h": return Invocation(address: address, command: .help(nil))
            case "--version": return Invocation(address: address, command: .version)
            case "--address":
                guard let value = rest.popFirst() else { throw UsageError(description: "--address needs a bus address") }
                address = value
            default:
                if first.hasPrefix("--address=") {
                    address = String(first.dropFirst("--address=".count))
                } else {
                    throw UsageError(description: "unknown option '\(first)'")
                }
            }
        }
        guard let name = rest.popFirst() else { throw UsageError(description: "no command given") }
        if name == "help" { return Invocation(address: address, command: .help(rest.first)) }
        guard subcommands.contains(name) else { throw UsageError(description: "unknown command '\(name)'") }
        if rest.contains(where: { $0 == "--help" || $0 == "-h" }) {
            return Invocation(address: address, command: .help(name))
        }
        var reader = ArgumentReader(command: name, arguments: all[rest.startIndex...])
        let command: Command
        switch name {
        case "say": command = .say(try parseSay(&reader))
        case "voices": command = try parseVoices(&reader)
        case "listen": command = .listen(try parseListen(&reader))
        case "stop": command = .stop(try parseStop(&reader))
        case "pause": try noArguments(&reader); command = .pause
        case "resume": try noArguments(&reader); command = .resume
        case "status": command = .status(json: try onlyJSON(&reader))
        case "monitor": try noArguments(&reader); command = .monitor
        case "insert": command = .insert(try parseInsert(&reader))
        default: command = .dictate(try parseDictate(&reader))
        }
        return Invocation(address: address, command: command)
    }

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
            case .flag(let flag): throw reader.unknown(flag)
            }
        }
        guard !words.isEmpty else { throw reader.error("say needs some text") }
        if words == ["-"] {
            request.fromStandardInput = true
        } else {
            request.text = words.joined(separator: " ")
        }
        return request
    }

    static func parseVoices(_ reader: inout ArgumentReader) throws(UsageError) -> Command {
        var language: String?
        var json = false
        while let item = reader.next() {
            switch item {
            case .flag("--json"): json = true
            case .operand(let tag) where language == nil: language = tag
            case .operand(let extra): throw reader.unexpected(extra)
            case .flag(let flag): throw reader.unknown(flag)
            }
        }
        return .voices(language: language ?? "", json: json)
    }

    static func parseListen(_ reader: inout ArgumentReader) throws(UsageError) -> ListenRequest {
        var request = ListenRequest()
        var stdin = StdinAudio()
        var streamFlags: [ArgumentReader.Item] = []
        while let item = reader.next() {
            if try stdin.parse(item, &reader) {
                streamFlags.append(item)
                continue
            }
            switch item {
            case .flag("--stdin"): request.stdin = StdinAudio()
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
        if request.stdin != nil {
            if request.file != nil { throw reader.error("--stdin and --file cannot be used together") }
            request.stdin = stdin
        } else if let problem = streamFlags.lazy.compactMap(StdinAudio.wrongWithout).first {
            throw reader.error(problem)
        }
        return request
    }

    static func parseStop(_ reader: inout ArgumentReader) throws(UsageError) -> StopTarget {
        var target: StopTarget?
        while let item = reader.next() {
            switch item {
            case .flag("--all") where target == nil: target = .all
            case .operand(let text) where target == nil:
                guard let id = UInt64(text), id > 0 else { throw reader.error("stop takes an utterance id (a positive number), not '\(text)'") }
                target = .utterance(id)
            case .flag("--all"), .operand: throw reader.error("stop takes an utterance id or --all, not both")
            case .flag(let flag): throw reader.unknown(flag)
            }
        }
        return target ?? .mine
    }

    static func parseDictate(_ reader: inout ArgumentReader) throws(UsageError) -> DictateRequest {
        var request = DictateRequest()
        var modeFlag: String?
        var stdin = StdinAudio()
        var streamFlags: [ArgumentReader.Item] = []
        while let item = reader.next() {
            if try stdin.parse(item, &reader) {
                streamFlags.append(item)
                continue
            }
            switch item {
            case .flag("--stdin"): request.stdin = StdinAudio()
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
            case .flag(let flag): throw reader.unknown(flag)
            case .operand(let extra): throw reader.unexpected(extra)
            }
        }
        if request.stdin != nil {
            if let modeFlag { throw reader.error("--stdin dictates once, until the end of speech or of the input: not with \(modeFlag)") }
            request.stdin = stdin
        } else if let problem = streamFlags.lazy.compactMap(StdinAudio.wrongWithout).first {
            throw reader.error(problem)
        }
        return request
    }

    static func parseInsert(_ reader: inout ArgumentReader) throws(UsageError) -> InsertRequest {
        var request = InsertRequest()
        var words: [String] = []
        while let item = reader.next() {
            switch item {
            case .operand(let word): words.append(word)
            case .flag("--output"):
                let output = try reader.value(of: "--output")
                guard let mode = InsertionMode(rawValue: output) else {
                    throw reader.error("--output takes type, paste or clipboard, not '\(output)'")
                }
                request.mode = mode
            case .flag("--typer"): request.typer = try typer(&reader)
            case .flag("--paste-keys"): request.pasteKeys = try pasteKeys(&reader)
            case .flag(let flag): throw reader.unknown(flag)
            }
        }
        guard !words.isEmpty else { throw reader.error("insert needs some text") }
        request.text = words.joined(separator: " ")
        return request
    }

    static func typer(_ reader: inout ArgumentReader) throws(UsageError) -> Typer {
        let name = try reader.value(of: "--typer")
        guard let typer = Typer(rawValue: name) else { throw reader.error("--typer takes xdotool, wtype or ydotool, not '\(name)'") }
        return typer
    }

    static func pasteKeys(_ reader: inout ArgumentReader) throws(UsageError) -> PasteKeys {
        let text = try reader.value(of: "--paste-keys")
        guard let keys = PasteKeys(text) else {
            throw reader.error("--paste-keys takes keys such as ctrl+shift+v or shift+Insert, not '\(text)'")
        }
        return keys
    }

    static func onlyJSON(_ reader: inout ArgumentReader) throws(UsageError) -> Bool {
        var json = false
        while let item = reader.next() {
            switch item {
            case .flag("--json"): json = true
            case .flag(let flag): throw reader.unknown(flag)
            case .operand(let extra): throw reader.unexpected(extra)
            }
        }
        return json
    }

    static func noArguments(_ reader: inout ArgumentReader) throws(UsageError) {
        switch reader.next() {
        case nil: return
        case .flag(let flag): throw reader.unknown(flag)
        case .operand(let extra): throw reader.unexpected(extra)
        }
    }
}
