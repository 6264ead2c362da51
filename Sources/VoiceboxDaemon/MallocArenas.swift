import Glibc

/// glibc gives each thread that allocates concurrently an arena of its own and keeps what is
/// freed there: after concurrent recognitions, resident memory grew by over 100 MiB and stayed
/// (measured by the bus fuzzer; with one arena, 7 MiB). Capping the arenas keeps it bounded.
public enum MallocArenas {
    /// `M_ARENA_MAX` from <malloc.h>, which Swift's Glibc module does not import.
    static let arenaMaxParameter: Int32 = -8

    /// Call first thing in main, before threads allocate.
    public static func limit(to count: Int32) {
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        _ = unsafeBitCast(symbol, to: Mallopt.self)(arenaMaxParameter, count)
    }
}
