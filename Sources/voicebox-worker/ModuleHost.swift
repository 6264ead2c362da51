import Glibc
import VoiceboxContract

/// Mode `output-module` (see WorkerProtocol's OutputModuleMode): confines itself, then becomes the
/// module. Nothing of the worker runs after the exec.
enum ModuleHost {
    static func run(_ options: [String: String]) -> Never {
        guard let parent = options["parent"].flatMap({ pid_t($0) }), let program = options["module"] else {
            fail("output-module needs --parent PID and --module PROGRAM", status: 64)
        }
        // The module's standard error goes nowhere: the audio library sd_espeak-ng loads complains
        // there of every socket and memfd the confinement refuses, at each start. How a module
        // fails reaches the service anyway (its protocol, its end). Opened now: once confined, no
        // file opens for writing. The worker's own complaints keep the real one (closed by the exec).
        let quiet = open("/dev/null", O_WRONLY | O_CLOEXEC)
        let complaints = fcntl(2, F_DUPFD_CLOEXEC, 3)
        func failing(_ message: String) -> Never {
            if complaints >= 0 { dup2(complaints, 2) }
            fail(message, status: 127)
        }
        if let why = ModuleConfinement.apply(parent: parent) {
            failing("cannot confine the output module \(program): \(why)")
        }
        if quiet >= 0 { dup2(quiet, 2) }
        let arguments = [program] + (options["config"].map { [$0] } ?? [])
        let argv = arguments.map { strdup($0) } + [nil]
        execv(program, argv)
        failing("cannot run the output module \(program): \(String(cString: strerror(errno)))")
    }
}
