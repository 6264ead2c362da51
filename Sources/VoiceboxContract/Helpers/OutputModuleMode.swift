/// # Mode `output-module`: a speech-dispatcher output module, confined
///
/// Speech rendered into memory (Speak's `output`, the Spiel provider's Synthesize) comes from
/// speech-dispatcher's own output modules, spoken to in their documented protocol (speech-dispatcher
/// manual, "Communication Protocol for Output Modules") with `AUDIO audio_output_method=server`,
/// which has the module write its samples back (705 blocks) instead of playing them.
///
/// A module is a program of its own, so the worker does not link it: it confines itself and then
/// executes it in its place, and the confinement is inherited across the exec (a seccomp filter
/// and no-new-privileges always are; the parent-death signal is, for a program that is not
/// set-user-ID, which no-new-privileges rules out anyway).
///
/// ## Starting
/// `voicebox-worker output-module --parent PID --module PROGRAM [--config FILE]`
/// - standard input and output: pipes to the service, which speaks the module protocol on them;
///   standard error: the module's diagnostics (the service's log).
/// - The worker asks for SIGKILL when the service dies (and exits if it already has), sets
///   no-new-privileges, lowers its priority (nice 10: rendering for files and pipes must not take
///   the CPU from speech being played), installs the module filter (`voicebox-worker`'s
///   ModuleConfinement) and executes `PROGRAM FILE` with a small environment: HOME, LANG, PATH;
///   no bus, sound server or display address, so nothing in the module can reach one.
/// - A worker that cannot confine itself or execute the program says why on standard error and
///   exits 127 before the module's first line: the service takes that as a failed start.
///
/// ## Use
/// One module process renders one utterance and ends: every utterance starts from a module that
/// has rendered nothing (espeak-ng's output depends on what it rendered before; from a fresh one
/// it is the same for the same text), and no caller's text reaches a process that renders
/// another caller's. Modules are started ahead (a spare per engine in use) so that none waits for
/// one to load. The service bounds each wait (VoiceboxCore's Bounds): module-start (10 s) for the
/// module's INIT, then module-reply (5 s) for each reply and module-silence (10 s) between two
/// pieces of audio while it waits for more; a module that takes longer is killed and its utterance
/// fails.
extension WorkerProtocol {
    public static let outputModuleMode = "output-module"
    /// The nice value a module runs at.
    public static let moduleNice: Int32 = 10
}
