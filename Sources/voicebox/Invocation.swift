import VoiceboxContract
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

extension Invocation {
    static let subcommands = ["say", "voices", "listen", "stop", "pause", "resume", "status", "monitor", "dictate", "insert"]

    /// The client's version (the service's is its Version property).
    static let version = Release.version

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
}
