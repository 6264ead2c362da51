/// Keeps a voice-activity detector's first impressions of a stream from counting as speech.
///
/// pocketsphinx's detector reports "speech" for the first second or so of every stream while it
/// learns the background noise (see `SpeechDecoder.detectorWarmUp`). Counted, that false start
/// would end a microphone recognition with nothing about 1.5 s after it began, before anyone had
/// spoken; decoded, it leaves noise words and a cepstral mean learned from noise behind (measured:
/// "go forward ten meters" after a quiet start came out as "roar years"). So during the warm-up no
/// speech is counted, and speech that has ended within it is dropped from the decoder. Speech that
/// is still going on when the warm-up ends counts from then on.
///
/// The price: a word said and finished within the warm-up (1.5 s for pocketsphinx) is not heard.
/// RecognitionStarted comes before it, so a caller can prompt for speech after it.
struct DetectorWarmUp: Sendable, Equatable {
    let seconds: Double
    private var elapsed = 0.0
    private var sawSpeech = false

    init(seconds: Double) {
        self.seconds = seconds
    }

    /// Whether the warm-up is over: what the detector says counts from here on.
    var isOver: Bool { elapsed >= seconds }

    /// Feeds one chunk's detector report. Returns whether it counts as speech, and whether the
    /// decoder should drop what it has heard so far (a false start has just ended).
    mutating func feed(inSpeech: Bool, seconds chunk: Double) -> (inSpeech: Bool, discard: Bool) {
        let warming = elapsed < seconds
        elapsed += chunk
        guard warming else { return (inSpeech, false) }
        if inSpeech {
            sawSpeech = true
            return (false, false)
        }
        defer { sawSpeech = false }
        return (false, sawSpeech)
    }
}
