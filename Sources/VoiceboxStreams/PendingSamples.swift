/// Samples read from the writer and not yet taken: taken from the front without moving the rest
/// each time (a stream read ahead may hold 20 minutes of them), which moves once half is taken,
/// and whose memory goes once all is taken.
struct PendingSamples {
    private var samples: [Int16] = []
    private var start = 0

    var count: Int { samples.count - start }
    var isEmpty: Bool { count == 0 }

    mutating func append(_ more: [Int16]) { samples += more }

    /// Up to `maxCount` samples from the front.
    mutating func take(_ maxCount: Int) -> [Int16] {
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
