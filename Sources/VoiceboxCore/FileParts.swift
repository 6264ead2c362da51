/// Where a long recording is cut so that its parts can decode on several cores at once: at the
/// quietest moment near each part's end, so that a cut falls in a pause, not inside a word.
///
/// Pure arithmetic over the samples: no decoder is needed to find the pauses, only the energy
/// of short windows.
enum FileParts {
    /// Parts are about this long: each cut starts a decoder afresh (its utterance and its
    /// cepstral mean), and words near it may differ from one pass: 30 s parts changed 7 % of the
    /// words of the test's recording, 60 s parts 3 %.
    static let partSeconds = 60.0
    /// A cut is looked for in the last `searchSeconds` of each part.
    static let searchSeconds = 8.0
    /// The quietness of a place is the energy of this much audio around it.
    static let windowSeconds = 0.3
    static let sampleRate = 16_000.0

    /// The parts of `samples`, in order, covering all of them.
    static func ranges(of samples: [Int16], partSeconds: Double = partSeconds) -> [Range<Int>] {
        let part = Int(partSeconds * sampleRate)
        let search = Int(min(searchSeconds, partSeconds / 2) * sampleRate)
        let frame = 160  // 10 ms
        guard samples.count > part + part / 4 else { return [0..<samples.count] }
        // Energy per 10 ms frame, then summed over the window: the quietest window's middle is the cut.
        let energies = stride(from: 0, to: samples.count, by: frame).map { start in
            samples[start..<min(start + frame, samples.count)].reduce(0.0) { $0 + Double($1) * Double($1) }
        }
        let window = max(1, Int(windowSeconds * sampleRate) / frame)
        var ranges: [Range<Int>] = []
        var start = 0
        while samples.count - start > part + part / 4 {
            let firstFrame = (start + part - search) / frame
            let lastFrame = (start + part) / frame - window
            var best = firstFrame
            var bestEnergy = Double.infinity
            var sum = energies[firstFrame..<firstFrame + window].reduce(0, +)
            for index in firstFrame...lastFrame {
                if index > firstFrame { sum += energies[index + window - 1] - energies[index - 1] }
                if sum < bestEnergy {
                    bestEnergy = sum
                    best = index
                }
            }
            let cut = (best + window / 2) * frame
            ranges.append(start..<cut)
            start = cut
        }
        ranges.append(start..<samples.count)
        return ranges
    }
}
