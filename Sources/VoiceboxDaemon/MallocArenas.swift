import Glibc

/// glibc's allocator, tuned for a long-lived service whose callers send it what they like.
/// (`mallopt` and `malloc_trim` are in <malloc.h>, which Swift's Glibc module does not import.)
public enum MallocArenas {
    /// `M_ARENA_MAX` and `M_MMAP_THRESHOLD` from <malloc.h>.
    static let arenaMaxParameter: Int32 = -8
    static let mmapThresholdParameter: Int32 = -3
    static let mmapThreshold: Int32 = 128 * 1024

    /// Call first thing in main, before threads allocate.
    ///
    /// glibc gives each thread that allocates concurrently an arena of its own and keeps what is
    /// freed there: after concurrent recognitions, resident memory grew by over 100 MiB and stayed
    /// (measured by the bus fuzzer; with one arena, 7 MiB). Capping the arenas keeps it bounded.
    ///
    /// glibc also raises its mmap threshold (up to 32 MiB) each time a mapped block is freed; blocks
    /// below it then come from the arenas and stay resident after they are freed. Any caller can
    /// send messages of hundreds of KiB, and a decoder's tables are MiBs: the bus fuzzer saw 8-20
    /// MiB more after 20,000 calls than with the threshold fixed at glibc's default, where every
    /// block from 128 KiB up has a mapping of its own, unmapped when it is freed.
    public static func limit(to count: Int32) {
        guard let mallopt = function("mallopt", as: (@convention(c) (Int32, Int32) -> Int32).self) else { return }
        _ = mallopt(arenaMaxParameter, count)
        _ = mallopt(mmapThresholdParameter, mmapThreshold)
    }

    /// Gives the free pages in the arenas back to the system. glibc returns only the top of an arena
    /// by itself: after a burst of large calls, the freed space in between stayed resident (the bus
    /// fuzzer: +20-30 MiB after 20,000 calls, 3-5 MiB after this). It walks the arenas, about a
    /// millisecond: run it once traffic has stopped, not per call.
    public static func returnFreeMemory() {
        guard let trim = function("malloc_trim", as: (@convention(c) (Int) -> Int32).self) else { return }
        _ = trim(0)
    }

    private static func function<T>(_ name: String, as type: T.Type) -> T? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: type)
    }
}
