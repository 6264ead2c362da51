import Foundation
import Glibc
import Synchronization

/// Records a sink's monitor with parec (16 kHz mono S16) and says when it was loud.
final class MonitorRecorder: Sendable {
    static let rate = 16_000
    private let process: Subprocess
    private let readFD: Int32
    private let samples = Shared<[Int16]>([])
    private let startedAt = ContinuousClock.now

    init(device: String) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.EMFILE) }
        readFD = fds[0]
        process = try Subprocess("/usr/bin/parec", ["-d", device, "--raw", "--format=s16le", "--rate=16000", "--channels=1",
                                                    "--latency-msec=20"], stdoutFD: fds[1])
        close(fds[1])
        let readFD = readFD, samples = samples
        Thread.detachNewThread {
            var buffer = [Int16](repeating: 0, count: 1600)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                samples.withLock { $0.append(contentsOf: buffer[0..<(count / 2)]) }
            }
            close(readFD)
        }
    }

    func stop() {
        process.signal(SIGTERM)
    }

    deinit { stop() }

    /// Seconds of audio captured so far.
    var seconds: Double { Double(samples.withLock { $0.count }) / Double(Self.rate) }

    /// Waits until the recorder delivers audio at all (parec takes a moment to start).
    func waitUntilRecording() async throws {
        try await waitUntil("parec to deliver audio") { self.seconds > 0.1 }
    }

    /// Root mean square of the samples in [from, to) seconds, 0...32768.
    func rms(from: Double, to: Double? = nil) -> Double {
        samples.withLock { all in
            let start = min(all.count, Int(from * Double(Self.rate)))
            let end = min(all.count, Int((to ?? .infinity).isFinite ? to! * Double(Self.rate) : Double(all.count)))
            guard end > start else { return 0 }
            var sum = 0.0
            for sample in all[start..<end] { sum += Double(sample) * Double(sample) }
            return (sum / Double(end - start)).squareRoot()
        }
    }

    /// The time (seconds into the recording) of the first 10 ms window louder than `threshold`
    /// at or after `after`.
    func firstLoud(after: Double = 0, threshold: Double = 300) -> Double? {
        let window = Self.rate / 100
        return samples.withLock { all in
            var index = Int(after * Double(Self.rate))
            while index + window <= all.count {
                var sum = 0.0
                for sample in all[index..<(index + window)] { sum += Double(sample) * Double(sample) }
                if (sum / Double(window)).squareRoot() > threshold { return Double(index) / Double(Self.rate) }
                index += window
            }
            return nil
        }
    }

    /// The last loud window's end, in seconds into the recording.
    func lastLoud(threshold: Double = 300) -> Double? {
        let window = Self.rate / 100
        return samples.withLock { all in
            var index = (all.count / window - 1) * window
            while index >= 0 {
                var sum = 0.0
                for sample in all[index..<(index + window)] { sum += Double(sample) * Double(sample) }
                if (sum / Double(window)).squareRoot() > threshold { return Double(index + window) / Double(Self.rate) }
                index -= window
            }
            return nil
        }
    }

    /// Seconds into the recording for a moment measured by the test's clock.
    func offset(of instant: ContinuousClock.Instant) -> Double {
        let elapsed = instant - startedAt
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
