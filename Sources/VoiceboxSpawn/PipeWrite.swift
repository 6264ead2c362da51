import Glibc

extension Spawn {
    /// write(2) to a child's standard input without SIGPIPE. A child that exits before reading all
    /// of it (wl-copy with no display, xclip with no X server) would otherwise end the writer: the
    /// voicebox client does not ignore SIGPIPE, and ended so it lost the very text it was keeping
    /// (exit 141, nothing printed). SIGPIPE is blocked on this thread for the write; one the write
    /// raised is taken back (sigtimedwait), and the write fails with EPIPE instead.
    public static func writeWithoutSIGPIPE(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Int {
        var pipeOnly = sigset_t(), previous = sigset_t(), pendingBefore = sigset_t()
        sigemptyset(&pipeOnly)
        sigaddset(&pipeOnly, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeOnly, &previous)
        sigpending(&pendingBefore)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let failure = written < 0 ? errno : 0
        if failure == EPIPE, sigismember(&pendingBefore, SIGPIPE) == 0 {
            var now = timespec()
            _ = sigtimedwait(&pipeOnly, nil, &now)
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        errno = failure
        return written
    }
}
