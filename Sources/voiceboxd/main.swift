import Glibc
import VoiceboxContract
import VoiceboxDaemon
import VoiceboxCore

// Before any thread starts, so that every thread inherits the blocked signals: only the main
// thread's sigwait below ever takes them.
TerminationSignals.block()
// A reader that closes its pipe (a Spiel client's cancel) makes our write fail with EPIPE, which is
// handled where it happens; the signal would end the service. Children start with every signal at
// its default (VoiceboxSpawn).
signal(SIGPIPE, SIG_IGN)

let options: DaemonOptions
do {
    options = try DaemonOptions(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    Daemon.log("\(error)\n\(DaemonOptions.usage)")
    exit(64)
}
if options.showHelp {
    print(DaemonOptions.usage)
    exit(0)
}
if options.showVersion {
    print("voiceboxd \(Release.version)")
    exit(0)
}
// voiceboxd never writes to standard output, but pocketsphinx's grammar parser echoes what it
// cannot parse there: send it to the log with everything else.
dup2(STDERR_FILENO, STDOUT_FILENO)
MallocArenas.limit(to: 2)
// Callers' descriptors (Synthesize's pipes, streams, files) are each held while in use, and the
// soft limit a session gives (1024) is soon reached by many callers: everything here polls (no
// select), so the hard limit's worth is taken, at most 65,536.
var descriptors = rlimit()
if getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &descriptors) == 0, descriptors.rlim_cur < descriptors.rlim_max {
    descriptors.rlim_cur = min(descriptors.rlim_max, 65_536)
    _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &descriptors)
}
let (terminations, terminated) = AsyncStream<Int32>.makeStream()
// Detached: top-level code is on the main actor, whose thread waits in sigwait below.
Task.detached {
    exit(await Daemon.run(options, terminations: terminations))
}
var received = 0
TerminationSignals.waitForever { number in
    received += 1
    // A second one while the first is being handled: whatever hangs, the user means it.
    if received > 1 {
        Daemon.log("signal \(number) again: exiting at once")
        _exit(128 + number)
    }
    terminated.yield(number)
}
