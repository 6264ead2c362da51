import Glibc

/// SIGTERM and SIGINT, delivered as ordinary calls with no window in which one is lost or kills
/// the process uncleanly.
///
/// Neither a dispatch signal source nor a sigwait thread beside an async main is enough: the source
/// needs the signal ignored first and registers asynchronously (a TERM sent in between was discarded,
/// 1 run in 20), and under an async main the main thread runs with an empty mask whatever main
/// blocked (seen in /proc; libdispatch parks it in sigsuspend), so it takes any signal by its default
/// action. So the signals are blocked from the start of the process, and the main thread itself,
/// which has nothing else to do, takes them with sigwait(3).
public enum TerminationSignals {
    static let numbers: [Int32] = [SIGTERM, SIGINT]

    /// Blocks the signals in the calling thread and so in every thread started after it.
    /// Call it first thing in main, before anything starts a thread.
    public static func block() {
        var set = signalSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits for the signals for ever, calling `handler` with each one's number.
    /// Call it on the main thread once the work runs elsewhere (in a Task).
    public static func waitForever(_ handler: (Int32) -> Void) -> Never {
        var set = signalSet()
        while true {
            var number: Int32 = 0
            if sigwait(&set, &number) == 0 { handler(number) }
        }
    }

    static func signalSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        for number in numbers { sigaddset(&set, number) }
        return set
    }
}
