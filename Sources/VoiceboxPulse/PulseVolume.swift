import CPulse

/// Volume arithmetic on the server's own scale, with libpulse's conversions: pa_volume_t is cubic
/// (65536 × 10^(-15/20) = 11654 is -45 dB, not -15), so decibels go through
/// `pa_sw_volume_from_dB` and products through `pa_sw_volume_multiply`, never a linear factor.
public enum PulseVolume {
    /// Every channel of `volume` changed by `decibels` as heard (negative: lower).
    public static func attenuate(_ volume: [UInt32], byDecibels decibels: Double) -> [UInt32] {
        let factor = pa_sw_volume_from_dB(decibels)
        return volume.map { pa_sw_volume_multiply($0, factor) }
    }

    /// A volume in decibels (-infinity for silence).
    public static func decibels(_ volume: UInt32) -> Double {
        pa_sw_volume_to_dB(volume)
    }
}
