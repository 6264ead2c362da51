import Foundation
import VoiceboxBus
import VoiceboxInterface

/// voicebox: the command-line client of voiceboxd.
let usage = """
    usage: voicebox [--address BUS] COMMAND
      say [options] TEXT...   speak TEXT and wait until it has been spoken
          --voice ID  --language TAG  --rate R  --pitch P  --volume V  --ssml
          --priority message|important|text|notification|progress  --no-wait (print the id at once)
      voices [LANGUAGE]       list voices (id, language, variant), best match first
      stop [ID]               stop an utterance, whoever queued it
      stop --all              stop every program's speech (bind it to a "stop reading" key)
    """

struct UsageError: Error, CustomStringConvertible { var description: String }

func fail(_ message: String, status: Int32 = 1) -> Never {
    FileHandle.standardError.write(Data("voicebox: \(message)\n".utf8))
    exit(status)
}

var arguments = Array(CommandLine.arguments.dropFirst())[...]
var busAddress: String?
if arguments.first == "--address" {
    arguments.removeFirst()
    busAddress = arguments.popFirst()
}
guard let command = arguments.popFirst(), command != "--help", command != "-h" else {
    print(usage)
    exit(arguments.isEmpty ? 0 : 64)
}

/// Turns `say`'s flags into Speak's options.
func sayOptions(_ args: inout ArraySlice<String>) throws -> (String, VarDict) {
    var options = VarDict(["wait": .boolean(true)])
    var words: [String] = []
    func value(_ flag: String) throws -> String {
        guard let next = args.popFirst() else { throw UsageError(description: "\(flag) needs a value") }
        return next
    }
    func number(_ flag: String) throws -> DBusValue {
        let text = try value(flag)
        guard let number = Double(text) else { throw UsageError(description: "\(flag) takes a number, not '\(text)'") }
        return .double(number)
    }
    while let arg = args.popFirst() {
        switch arg {
        case "--voice": options["voice"] = .string(try value(arg))
        case "--language": options["language"] = .string(try value(arg))
        case "--rate": options["rate"] = try number(arg)
        case "--pitch": options["pitch"] = try number(arg)
        case "--volume": options["volume"] = try number(arg)
        case "--priority": options["priority"] = .string(try value(arg))
        case "--ssml": options["ssml"] = .boolean(true)
        case "--no-wait": options["wait"] = .boolean(false)
        case "--": words.append(contentsOf: args); args = []
        default:
            if arg.hasPrefix("--") { throw UsageError(description: "unknown option \(arg)") }
            words.append(arg)
        }
    }
    guard !words.isEmpty else { throw UsageError(description: "say needs some text") }
    return (words.joined(separator: " "), options)
}

let connection: BusConnection
do {
    connection = try busAddress.map { try BusConnection(address: $0) } ?? BusConnection.session()
} catch {
    fail("cannot reach the session bus: \(error)")
}

let speech = Speech1.proxy(connection)

/// Runs one call; a service error is one plain line, never a D-Bus dump.
@discardableResult
func run<T>(_ body: () async throws(DBusError) -> T) async -> T {
    do {
        return try await body()
    } catch {
        fail(error.message.isEmpty ? error.name : "\(error.message) (\(error.name))")
    }
}

do {
    switch command {
    case "say":
        let (text, options) = try sayOptions(&arguments)
        let id = await run { () async throws(DBusError) in try await speech.call(Speech1.speak, text, options, timeout: .seconds(600)) }
        if options["wait"] == .boolean(false) { print(id) }
    case "voices":
        let language = arguments.popFirst() ?? ""
        let voices = await run { () async throws(DBusError) in try await speech.call(Speech1.listVoices, language) }
        for voice in voices { print([voice.id, voice.name, voice.language, voice.variant].joined(separator: "\t")) }
    case "stop":
        if arguments.first == "--all" {
            await run { () async throws(DBusError) in try await speech.call(Speech1.stopAllSpeaking) }
        } else {
            let text = arguments.popFirst() ?? "0"
            guard let id = UInt64(text) else { throw UsageError(description: "stop takes an utterance id, not '\(text)'") }
            await run { () async throws(DBusError) in try await speech.call(Speech1.stopSpeaking, id) }
        }
    default:
        throw UsageError(description: "unknown command '\(command)'\n\(usage)")
    }
} catch {
    fail("\(error)", status: 64)
}
await connection.close()
