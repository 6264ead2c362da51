import Glibc  // log10

/// The loudness of microphone audio as a 0...1 level for a meter: the loudest chunk's RMS since
/// the last reading, on a logarithmic scale from -60 dBFS (0) to full scale (1), the range a
/// voice moves a meter through.
struct LevelMeter: Sendable {
    static let floorDecibels = -60.0
    private var peakRMS = 0.0

    mutating func add(_ samples: [Int16]) {
        guard !samples.isEmpty else { return }
        var sum = 0.0
        for sample in samples { sum += Double(sample) * Double(sample) }
        peakRMS = max(peakRMS, (sum / Double(samples.count)).squareRoot())
    }

    /// The level since the last call, which starts a new window.
    mutating func read() -> Double {
        defer { peakRMS = 0 }
        return Self.level(rms: peakRMS)
    }

    static func level(rms: Double) -> Double {
        guard rms > 0 else { return 0 }
        let decibels = 20 * log10(rms / 32768)
        return min(1, max(0, (decibels - floorDecibels) / -floorDecibels))
    }
}
