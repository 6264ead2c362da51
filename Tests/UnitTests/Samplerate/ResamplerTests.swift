@testable import TestSupport
import Glibc
import XCTest
import VoiceboxSamplerate

/// The resampler (libsamplerate, for files and streams) against the signal itself: a tone comes through at the new rate, one
/// above the new Nyquist does not, and chunks change nothing.
final class ResamplerTests: XCTestCase {
    private func tone(_ frequency: Double, rate: Int, seconds: Double, amplitude: Double = 0.5) -> [Float] {
        (0..<Int(Double(rate) * seconds)).map { Float(amplitude * sin(2 * Double.pi * frequency * Double($0) / Double(rate))) }
    }

    /// Root mean square of `samples` after the filter's reach at both ends.
    private func rms(_ samples: [Float], skipping edge: Int) -> Double {
        let middle = samples[edge..<(samples.count - edge)]
        return (middle.map { Double($0) * Double($0) }.reduce(0, +) / Double(middle.count)).squareRoot()
    }

    func testATonePassesAtEveryRateTheStreamsTake() throws {
        for rate in [8_000, 11_025, 22_050, 32_000, 44_100, 48_000] {
            let resampler = try Resampler(from: rate, to: 16_000)
            let output = try resampler.process(tone(1_000, rate: rate, seconds: 1), end: true)
            XCTAssertEqual(Double(output.count), 16_000, accuracy: 1, "\(rate) Hz: one output per 1/16000 s of input, rounded")
            let expected = tone(1_000, rate: 16_000, seconds: 1)
            let error = zip(output, expected).dropFirst(100).dropLast(100).map { Double($0 - $1) * Double($0 - $1) }
            let errorRMS = (error.reduce(0, +) / Double(error.count)).squareRoot()
            let decibels = 20 * log10(errorRMS / (0.5 / 2.0.squareRoot()))
            XCTAssertLessThan(decibels, -70, "\(rate) Hz: the 1 kHz tone's error")
        }
    }

    func testWhatTheNewRateCannotHoldIsRemoved() throws {
        for (frequency, rate) in [(10_000.0, 48_000), (12_000.0, 44_100), (9_000.0, 32_000)] {
            let resampler = try Resampler(from: rate, to: 16_000)
            let output = try resampler.process(tone(frequency, rate: rate, seconds: 1), end: true)
            let decibels = 20 * log10(rms(output, skipping: 200) / (0.5 / 2.0.squareRoot()))
            XCTAssertLessThan(decibels, -60, "\(frequency) Hz from \(rate) Hz would alias into the speech band")
        }
        // Three quarters of the new Nyquist pass within 1 dB (6 kHz at 16 kHz: 0.5 dB down with
        // SINC_FASTEST; the en-US model hears to 6.8 kHz), and 1 kHz whole.
        let resampler = try Resampler(from: 48_000, to: 16_000)
        let output = try resampler.process(tone(6_000, rate: 48_000, seconds: 1), end: true)
        XCTAssertLessThan(abs(20 * log10(rms(output, skipping: 200) / (0.5 / 2.0.squareRoot()))), 1)
    }

    func testChunksGiveTheSameSamplesAsTheWhole() throws {
        let input = tone(440, rate: 44_100, seconds: 0.5) + tone(3_000, rate: 44_100, seconds: 0.5)
        let whole = try Resampler(from: 44_100, to: 16_000)
        let once = try whole.process(input, end: true)
        let chunked = try Resampler(from: 44_100, to: 16_000)
        var pieces: [Float] = []
        var start = 0
        for size in [1, 7, 100, 4096, 3, 9000].cycled(until: input.count) {
            let end = min(input.count, start + size)
            pieces += try chunked.process(Array(input[start..<end]), end: false)
            start = end
            if start == input.count { break }
        }
        pieces += try chunked.process([], end: true)
        XCTAssertEqual(pieces, once)
    }

    func testUpsamplingKeepsTheToneAndTheLength() throws {
        let resampler = try Resampler(from: 8_000, to: 16_000)
        let output = try resampler.process(tone(3_000, rate: 8_000, seconds: 1), end: true)
        XCTAssertEqual(output.count, 16_000)
        XCTAssertLessThan(abs(20 * log10(rms(output, skipping: 200) / (0.5 / 2.0.squareRoot()))), 1, "3 kHz, 3/4 of 8 kHz's Nyquist")
    }
}

private extension Array {
    /// The elements over and over, enough times that their sum could reach `total`.
    func cycled(until total: Int) -> [Element] where Element == Int {
        var result: [Int] = []
        var sum = 0
        while sum < total {
            for element in self {
                result.append(element)
                sum += element
            }
        }
        return result
    }
}
