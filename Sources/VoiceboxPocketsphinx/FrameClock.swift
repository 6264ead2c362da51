/// Maps pocketsphinx's word frames back to positions in the audio stream.
///
/// pocketsphinx 0.8 drops silence before decoding (its voice-activity detector keeps only each
/// speech region plus 0.2 s before and 0.5 s after it) and reports a word's frames as
/// "frames decoded in this utterance" + "stream frame where the latest speech region began".
/// With one speech region per utterance that is exact. When an utterance spans several regions
/// (grammar and keyphrase searches do not split at pauses) it misplaces every earlier word, so
/// this records where each region began in both counts and translates. Decoded counts lag the
/// audio by the feature window (frames held back until their right context arrives); `lag`
/// corrects for it, and what remains is good to about 20 ms.
struct FrameClock: Sendable, Equatable {
    /// A speech region: its first decoded frame and the stream frame that holds it.
    struct Region: Sendable, Equatable {
        var decoded: Int
        var stream: Int
    }

    /// Frames the decoder holds back at the end of what it has been given.
    var lag = 0
    private(set) var regions: [Region] = []
    private var decoded = 0
    private var inSpeech = false

    /// Before each utterance.
    mutating func startUtterance() {
        regions = []
        decoded = 0
        inSpeech = false
    }

    /// After each chunk: the detector's state, frames decoded so far in this utterance, and
    /// frames in the stream so far.
    mutating func record(inSpeech nowInSpeech: Bool, decodedFrames: Int, streamFrames: Int) {
        if nowInSpeech, !inSpeech {
            // The region's frames decoded in this chunk are contiguous and end `lag` frames
            // before the stream's end. After an earlier region, this chunk first decodes that
            // region's last `lag` frames, held back through the silence.
            let fresh = max(0, decodedFrames - decoded)
            regions.append(regions.isEmpty
                ? Region(decoded: decoded, stream: max(0, streamFrames - lag - fresh))
                : Region(decoded: decoded + lag, stream: max(0, streamFrames - fresh)))
        }
        inSpeech = nowInSpeech
        decoded = decodedFrames
    }

    /// The stream frame of a frame number as pocketsphinx reports it (`ps_seg_frames`).
    /// `offset` is pocketsphinx's own stream offset for this utterance when known (the reported
    /// start of the utterance's first segment, which always begins at decoded frame 0).
    func streamFrame(reported: Int, offset: Int?) -> Int {
        guard regions.count > 1, let latest = regions.last else { return reported }
        let decodedFrame = reported - (offset ?? latest.stream)
        let region = regions.last { $0.decoded <= decodedFrame } ?? regions[0]
        return region.stream + (decodedFrame - region.decoded)
    }
}
