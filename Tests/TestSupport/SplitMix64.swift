/// SplitMix64: small, fast and the same everywhere (the standard library's generators and its
/// `random(in:using:)` are not promised to stay the same), so a seed always means the same sequence
/// and a fuzzed failure can be replayed.
public struct SplitMix64: Sendable {
    public var state: UInt64

    public init(state: UInt64) { self.state = state }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// 0 ..< n (n > 0).
    public mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    public mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    public mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
    public mutating func between(_ low: Int, _ high: Int) -> Int { low + below(high - low + 1) }
}
