@testable import TestSupport
import VoiceboxCore
import VoiceboxPulse
import XCTest

/// The service computes volumes without libpulse (CubicVolume); libpulse is the reference.
final class CubicVolumeTests: XCTestCase {
    func testAttenuatingGivesLibpulsesVolumesExactly() {
        let decibels: [Double] = [-.infinity, -250, -200, -199.9, -96, -45, -15, -12.5, -6, -1, -0.01, 0, 0.01, 3, 6, 11, 40, .infinity]
        let volumes: [UInt32] = [0, 1, 2, 100, 11_654, 32_768, 65_535, 65_536, 65_537, 98_304, 131_072, 1 << 20,
                                 CubicVolume.maximum - 1, CubicVolume.maximum, CubicVolume.maximum + 1, UInt32.max]
        for decibel in decibels {
            let ours = CubicVolume.attenuate(volumes, byDecibels: decibel)
            let libpulses = PulseVolume.attenuate(volumes, byDecibels: decibel)
            XCTAssertEqual(ours, libpulses, "\(decibel) dB")
        }
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let volume = [UInt32.random(in: 0...300_000, using: &generator)]
            let decibel = Double.random(in: -120...20, using: &generator)
            XCTAssertEqual(CubicVolume.attenuate(volume, byDecibels: decibel), PulseVolume.attenuate(volume, byDecibels: decibel),
                           "\(volume[0]) by \(decibel) dB")
        }
    }
}
