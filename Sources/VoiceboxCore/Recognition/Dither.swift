/// The faintest noise, added to microphone audio before it is decoded: +1 to about a quarter of
/// the samples, as sphinxbase's own `-dither` does.
///
/// Why: pocketsphinx misjudges exact digital silence (the monitor of an idle sink, a muted input,
/// the test stack's fake microphone between recordings) and then mishears the speech that follows.
/// Measured with espeak-ng through a sink monitor and a small grammar: without it the bare
/// pocketsphinx_continuous heard "close the garage" as "open the garage" and "open the window" as
/// nothing at all; with it, both right. A real microphone's own noise is far above one step, so
/// there it changes nothing. Files are not dithered: they must give the bare tool's words.
///
/// Deterministic (xorshift with a fixed seed): the same audio always gives the same words.
struct Dither: Sendable {
    private var state: UInt64 = 0x9E37_79B9_7F4A_7C15

    mutating func apply(_ samples: inout [Int16]) {
        for index in samples.indices {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            if state & 3 == 0, samples[index] < .max { samples[index] += 1 }
        }
    }
}
