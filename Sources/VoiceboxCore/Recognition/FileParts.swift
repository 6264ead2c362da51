/// Where a long recording is cut so that its parts can decode on several cores at once: at the
/// quietest moment near each part's end, so that a cut falls in a pause, not inside a word.
///
/// Pure arithmetic over the samples: no decoder is needed to find the pauses, only the energy
/// of short windows. The lengths follow the part's (`file-part`, a minute unless set: the tests
/// set it small, so that a recording of seconds is cut as an hour's is).
struct FileParts: Sendable {
    /// Parts are about this long: units of work small enough that lanes that start late, or give
    /// their turn back, still share the file evenly. Each cut costs the lane that takes the part
    /// after it a skim of the file up to it (see `RecognitionRun+LongFile`).
    var partSeconds: Double
    /// Files this long or longer are cut into parts (1.5 parts: 90 s).
    var minimumFileSeconds: Double { partSeconds * 1.5 }
    /// A cut is looked for within this of where equal parts would meet, either side: 4 s, or a
    /// quarter of a part where parts are shorter than 16 s (only the tests make them so).
    var searchSeconds: Double { min(4, partSeconds / 4) }
    /// Parts are never shorter than this, so many cores do not cut a short file into slivers
    /// (each lane's model and skim cost more than a sliver saves): half a part, 30 s.
    var minimumPartSeconds: Double { partSeconds / 2 }
    /// The quietness of a place is the energy of this much audio around it.
    static let windowSeconds = 0.3
    private static let sampleRate = FileReading.sampleRate

    init(partSeconds: Double = Bound.filePart.standard.inSeconds) {
        self.partSeconds = partSeconds
    }

    /// How many parts a recording of `seconds` is cut into for `lanes` cores: parts of at most
    /// about `partSeconds`, and a multiple of the lanes, so that every core gets as much to do.
    func partCount(seconds: Double, lanes: Int) -> Int {
        let lanes = max(1, lanes)
        let even = lanes * max(1, Int((seconds / (Double(lanes) * partSeconds)).rounded(.up)))
        return max(1, min(even, Int(seconds / minimumPartSeconds)))
    }

    /// `samples` in `count` parts of about equal length, in order, covering all of them: each
    /// cut at the quietest place within `searchSeconds` around where equal parts would meet.
    /// From `base` on, when only the rest of the samples is to be cut (a fast stream's): the ranges
    /// are the samples' own indices, the first starting at `base`.
    func ranges(of samples: [Int16], from base: Int = 0, count: Int) -> [Range<Int>] {
        let frame = 160  // 10 ms
        let window = max(1, Int(Self.windowSeconds * Self.sampleRate) / frame)
        let part = (samples.count - base) / max(1, count)
        let search = min(Int(searchSeconds * Self.sampleRate), part / 2) / frame
        guard count > 1, part / frame > window + 2 * search + 1 else { return [base..<samples.count] }
        // Energy per 10 ms frame; a place's quietness is the sum over the window that starts there.
        let energies = stride(from: base, to: samples.count, by: frame).map { start in
            samples[start..<min(start + frame, samples.count)].reduce(0.0) { $0 + Double($1) * Double($1) }
        }
        var ranges: [Range<Int>] = []
        var start = base
        for index in 1..<count {
            let middle = index * part / frame
            let first = middle - search - window / 2, last = middle + search - window / 2
            var sum = energies[first..<first + window].reduce(0, +)
            var best = first, bestEnergy = sum
            for place in first + 1...last {
                sum += energies[place + window - 1] - energies[place - 1]
                if sum < bestEnergy {
                    bestEnergy = sum
                    best = place
                }
            }
            let cut = base + (best + window / 2) * frame
            ranges.append(start..<cut)
            start = cut
        }
        ranges.append(start..<samples.count)
        return ranges
    }
}
