/// Decodes one stream of 16 kHz mono audio, utterance after utterance. Not thread-safe: use it
/// from one task, one call at a time. The service's decoders are in worker processes: each call
/// is an exchange with one, which suspends its caller (and runs on its caller's executor:
/// `nonisolated(nonsending)`) while the worker decodes (pocketsphinx on the project's 2-core
/// machines: a third to a half of the audio's duration). An in-process decoder (the worker's
/// own, the tests') witnesses these with plain synchronous calls.
public protocol SpeechDecoder: AnyObject {
    /// Feeds samples (any count; 1024-4096 is a good chunk). The first call after `finish`
    /// begins a new utterance. Returns whether the engine's voice-activity detector hears
    /// speech at the end of these samples.
    nonisolated(nonsending) func process(_ samples: [Int16]) async throws -> Bool

    /// The best guess so far for the current utterance, or nil before any words.
    nonisolated(nonsending) func partial() async -> String?

    /// Ends the utterance and returns what was said (`.empty` if nothing).
    nonisolated(nonsending) func finish() async throws -> RecognitionResult

    /// Ends the utterance without a result and forgets what the decoder adapted to from it,
    /// keeping what its voice-activity detector has learned about the background noise. For
    /// audio that is known not to be speech (see `detectorWarmUp`).
    nonisolated(nonsending) func discard() async throws

    /// How the utterances from the next on are heard. `searching` false: the decoder only hears
    /// the audio, for what it adapts to (its cepstral mean, its detector's noise floor); its
    /// detector and its utterances go exactly as when searching, so that when it searches again it
    /// stands where one pass would stand there, but it finds no words (`finish` returns `.empty`)
    /// and costs a small part of a search (pocketsphinx: 0.005 of real time). `newStream`: it
    /// starts over as a fresh decoder would, its clock from 0 and nothing it adapted to kept (an
    /// utterance going on is dropped). Long files' parts use it (`RecognitionRun+LongFile`).
    nonisolated(nonsending) func hearNext(searching: Bool, newStream: Bool) async throws

    /// Seconds of audio the voice-activity detector needs at the start of a stream to learn the
    /// background noise; what it calls speech before then may be the noise itself (pocketsphinx:
    /// it reports "speech" from about 0.1 s to 1-1.3 s after the start, whatever the noise level).
    var detectorWarmUp: Double { get }

    /// Seconds the voice-activity detector keeps reporting speech after speech has ended
    /// (pocketsphinx: 0.5). An endpointer waiting for trailing silence counts from the real end
    /// of speech by subtracting this.
    var speechEndDelay: Double { get }

    /// Ends, from any thread, a call of this decoder's that is waiting (for a decoder in another
    /// process that does not answer) and every later one: they throw at once. For a cancel, whose
    /// caller wants no answer; nil where calls never wait on anything (an in-process decoder).
    /// Does nothing once the decoder is gone.
    var interrupt: (@Sendable () -> Void)? { get }
}

public extension SpeechDecoder {
    var speechEndDelay: Double { 0 }
    var detectorWarmUp: Double { 0 }
    var interrupt: (@Sendable () -> Void)? { nil }
}
