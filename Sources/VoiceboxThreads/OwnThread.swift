import Glibc

/// A thread of our own for a loop that must block (poll(2) on a C library's descriptors, a
/// semaphore), so that it never holds a thread of Dispatch's or the cooperative pool's.
/// Plain pthreads: Foundation's `Thread` would bring the whole of Foundation (and ICU) into the
/// service for this one thing.
public enum OwnThread {
    /// Starts `body` on a new detached thread named `name` (at most 15 bytes are kept).
    /// `body` is sent there: what it holds is the thread's alone (the bus loop's connection state).
    /// A thread that cannot be created is a fatal error: the process has run out of threads.
    public static func start(name: String, _ body: sending @escaping () -> Void) {
        let box = Unmanaged.passRetained(ThreadBody(run: body, name: name)).toOpaque()
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, runThreadBody, box)
        guard status == 0 else { fatalError("pthread_create: \(String(cString: strerror(status)))") }
        pthread_detach(thread)
    }
}

/// Crosses to the new thread through pthread_create's argument, and is used only there.
private final class ThreadBody {
    let run: () -> Void
    let name: String

    init(run: sending @escaping () -> Void, name: String) {
        self.run = run
        self.name = name
    }
}

/// The thread's entry: takes back the body `start` retained, names the thread, runs it.
private func runThreadBody(_ raw: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guard let raw else { return nil }
    let body = Unmanaged<ThreadBody>.fromOpaque(raw).takeRetainedValue()
    nameThisThread(body.name)
    body.run()
    return nil
}

/// Through /proc/thread-self/comm: Glibc's module has no pthread_setname_np. A name is for ps
/// and debuggers only, so a failure is ignored.
private func nameThisThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}
