import Foundation
import VoiceboxBus
import VoiceboxContract
import VoiceboxInsertion

/// voicebox: the command-line client of voiceboxd. Each subcommand is a file of its own; this
/// parses, connects, dispatches and turns the outcome into the exit status.
let invocation: Invocation
do {
    // The arguments' own bytes: a file name need not be UTF-8.
    let arguments = (1..<Int(CommandLine.argc)).map { index in
        Argument(bytes: Array(UnsafeBufferPointer(start: CommandLine.unsafeArgv[index], count: strlen(CommandLine.unsafeArgv[index]!)))
            .map { UInt8(bitPattern: $0) })
    }
    invocation = try Invocation.parse(arguments: arguments)
} catch {
    Output.error(error.description)
    Output.error(error.command.isEmpty ? "see 'voicebox --help'" : "see 'voicebox \(error.command) --help'")
    exit(ExitStatus.usage.rawValue)
}

if case .help(let topic) = invocation.command {
    Output.line(Help.text(for: topic))
    exit(ExitStatus.ok.rawValue)
}

if case .version = invocation.command {
    Output.line("voicebox \(Invocation.version)")
    exit(ExitStatus.ok.rawValue)
}

// With standard input closed, the bus connection would become descriptor 0 and --stdin would
// send the client's own bus socket as the audio: say so before connecting.
if invocation.readsStandardInput, fcntl(0, F_GETFD) == -1 {
    Output.error("--stdin: standard input is closed; pipe the audio in (e.g. parec --raw ... | voicebox listen --stdin)")
    exit(ExitStatus.usage.rawValue)
}

// insert needs no service. Its signals are noted from here on: the text is never dropped.
if case .insert(let request) = invocation.command {
    InsertionGuard.holdSignals()
    exit(await Insertion.run(request).rawValue)
}

let status: ExitStatus
do {
    let client: Client
    do throws(Failure) {
        client = try Client.connect(address: invocation.address)
    } catch {
        // No bus: no service either, and status says so as it does when the service is not running.
        if case .status(let json) = invocation.command { throw Client.notRunning(error, json: json) }
        throw error
    }
    status = try await client.run(invocation.command)
    await client.connection.close()
} catch let failure as Failure {
    if !failure.message.isEmpty { Output.error(failure.message) }
    status = failure.status
} catch let error as DBusError {
    let failure = Failure(error)
    Output.error(failure.message)
    status = failure.status
} catch let error as UsageError {
    Output.error(error.description)
    status = .usage
} catch {
    Output.error("\(error)")
    status = .refused
}
exit(status.rawValue)
