/// Samples read from the writer and not yet taken: taken from the front without moving the rest
/// each time (a stream read ahead may hold 20 minutes of them), which moves once half is taken,
/// and whose memory goes once all is taken.
struct PendingSamples {
    private var samples: [Int16] = []
    private var start = 0

    var count: Int { samples.count - start }
    var isEmpty: Bool { count == 0 }

    mutating func append(_ more: [Int16]) { samples += more }

    /// Room for `total` samples in all, so that reading ahead does not double the memory while it
    /// grows (pages not yet written take none).
    mutating func reserve(_ total: Int) { samples.reserveCapacity(start + total) }

    /// Up to `maxCount` samples from the front.
    mutating func take(_ maxCount: Int) -> [Int16] {
        if start == 0, maxCount >= samples.count {
            // All of it: handed over, not copied (a stream read ahead, 38 MB at most).
            defer { samples = [] }
            return samples
        }
        let end = start + max(0, min(maxCount, count))
        let taken = Array(samples[start..<end])
        start = end
        if start == samples.count {
            samples = []
            start = 0
        } else if start >= samples.count / 2 {
            samples.removeFirst(start)
            start = 0
        }
        return taken
    }
}
