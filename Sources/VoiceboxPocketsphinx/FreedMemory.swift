import Glibc

/// A decoder holds 30–95 MB in many small blocks. glibc keeps what is freed in its arenas, so after
/// two recognitions had decoders loaded at once, resident memory stayed at that peak for good (the bus
/// fuzzer saw +56 MiB after its warm-up). `malloc_trim` hands the free pages back; it walks the arenas
/// in about a millisecond, and decoders are freed rarely (after a recognition, or when idle).
enum FreedMemory {
    static func returnToSystem() {
        // malloc_trim is in <malloc.h>, which Swift's Glibc module does not import.
        typealias Trim = @convention(c) (Int) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
    }
}
