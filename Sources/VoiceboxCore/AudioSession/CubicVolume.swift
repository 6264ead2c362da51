import Glibc

/// Volume arithmetic on PulseAudio's own scale, as libpulse does it (volume.c: pa_sw_volume_from_dB,
/// pa_sw_volume_multiply), for a service that does not link libpulse. The scale is cubic: 65536 ×
/// 10^(-15/20) = 11654 is -45 dB, not -15; so decibels become a factor through the cube root, and
/// factors multiply. the unit tier (CubicVolumeTests) checks it against libpulse.
public enum CubicVolume {
    /// 100 % (PA_VOLUME_NORM).
    public static let norm: UInt32 = 0x10000
    /// The largest valid volume (PA_VOLUME_MAX); above it is PA_VOLUME_INVALID.
    public static let maximum: UInt32 = UInt32.max / 2

    /// Every channel of `volume` changed by `decibels` as heard (negative: lower).
    public static func attenuate(_ volume: [UInt32], byDecibels decibels: Double) -> [UInt32] {
        let factor = fromDecibels(decibels)
        return volume.map { multiply($0, factor) }
    }

    /// pa_sw_volume_from_dB: silence only at -infinity (PA_DECIBEL_MININFTY); NaN is silence too.
    public static func fromDecibels(_ decibels: Double) -> UInt32 {
        guard !decibels.isNaN, decibels > -.infinity else { return 0 }
        let linear = pow(10, decibels / 20)
        guard linear > 0 else { return 0 }
        let volume = (cbrt(linear) * Double(norm)).rounded(.toNearestOrAwayFromZero)
        return volume >= Double(maximum) ? maximum : UInt32(volume)
    }

    /// pa_sw_volume_multiply: the product of two volumes, rounded, clamped to the maximum.
    public static func multiply(_ a: UInt32, _ b: UInt32) -> UInt32 {
        guard a <= maximum, b <= maximum else { return UInt32.max }
        let product = (UInt64(a) * UInt64(b) + UInt64(norm) / 2) / UInt64(norm)
        return UInt32(min(product, UInt64(maximum)))
    }
}
