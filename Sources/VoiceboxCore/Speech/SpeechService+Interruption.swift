// What a call taking the audio (AudioSession) does to speech: it is held as if paused.
extension SpeechService: InterruptionTarget {
    /// A call took the audio: speech is held (the utterance cut off starts again on resume).
    public func externalInterruptionBegan() async {
        heldByCall = true
        updateSpeaking()
        await applyPause()
    }

    public func externalInterruptionEnded() async {
        heldByCall = false
        updateSpeaking()
        await applyPause()
    }
}
