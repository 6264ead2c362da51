import VoiceboxContract

/// Others interrupting Voicebox: a playing or recording stream with a call role (phone,
/// Communication) holds the targets (speech pauses, the microphone is corked) until it ends. A
/// call also holds what Voicebox took from others: nothing is given back while it lasts, whatever
/// of Voicebox's own ends meanwhile.
extension AudioSession {
    func updateCall(_ key: String, _ active: Bool) async {
        var next = calls
        if active { next.insert(key) } else { next.remove(key) }
        await setCalls(next)
    }

    func setCalls(_ next: Set<String>) async {
        guard !finished else { return }
        let was = !calls.isEmpty, now = !next.isEmpty
        calls = next
        guard was != now else { return }
        if now {
            callAnnounced = true
            updateInterrupted()
            bus.emit(Speech1.audioInterruption, .began, InterruptionInfo(reason: .external, id: 0))
            for target in targets { await target.externalInterruptionBegan() }
        } else {
            for target in targets { await target.externalInterruptionEnded() }
            callAnnounced = false
            updateInterrupted()
            bus.emit(Speech1.audioInterruption, .ended, InterruptionInfo(reason: .external, id: 0, shouldResume: true))
            // What ended during the call gives others back now (after the grace).
            scheduleRestore()
        }
    }
}
