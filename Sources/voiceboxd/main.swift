import Foundation
import VoiceboxDaemon
import VoiceboxCore

let options: DaemonOptions
do {
    options = try DaemonOptions(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("voiceboxd: \(error)\n\(DaemonOptions.usage)\n".utf8))
    exit(64)
}
if options.showHelp {
    print(DaemonOptions.usage)
    exit(0)
}
if options.showVersion {
    print("voiceboxd \(SpeechService.version)")
    exit(0)
}
exit(await Daemon.run(options))
