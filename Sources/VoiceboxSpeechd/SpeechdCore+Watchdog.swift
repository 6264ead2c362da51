import Dispatch

/// Noticing a speech-dispatcher that accepts speech but never speaks it: a wedged output module, or
/// a server frozen by another client's text. Nothing tells; it just stays silent for everyone while
/// answering every command (measured with 0.11.4: a stopped module, a bad index mark).
///
/// While anything of ours is in speech-dispatcher, it must make progress: a new utterance must begin
/// within `timings.begin` (`speechd-begin`, 3 s) of reaching it, and one being spoken must report
/// something (a mark, its end) as often. When it does not, SpeechdProbe.health looks: a stopped
/// process of the server is wedged at once; else the output module's voice list is asked for on a
/// connection of its own: one that fails is wedged, one that comes is busy (speaking, ours or another
/// program's), and one that does not come within the reply bound is busy if the server or its modules
/// did any work meanwhile, else wedged. Busy: the next look comes after twice the wait (up to
/// `timings.stallLimit`, 30 s); new speech arriving brings it back to `timings.begin`. Wedged:
/// recovery (SpeechdCore+Recovery). So a wedge is noticed within begin + reply (5 s).
///
/// The slowest honest start measured is 0.33 s (the first utterance after speech-dispatcher started,
/// 60 KB of text; 4,000 SSML marks: 0.27 s; with both cores busy, the same): 3 s is nine times that.
/// A begin bound shorter than an honest start costs a probe that finds the server busy, nothing more.
extension SpeechdCore {

    /// Whether speech-dispatcher holds anything of ours (live utterances or stopped ones it still has).
    var anythingInEngine: Bool {
        !tracks.isEmpty || utterances.values.contains(where: isInEngine)
    }

    /// Something of ours began, spoke a mark or ended (`spoken`), or was cancelled: the clock starts
    /// again. When it spoke, a restart that came before worked: the next wedge (another caller may
    /// send one at any time) is restarted at once, not after a backoff grown by wedges long undone.
    func noteProgress(spoken: Bool) {
        if spoken {
            lastRestart = nil
            restartBackoff = timings.restartFirst
        }
        stallProgress = true
        stallWait = timings.begin
        armStallCheck(after: timings.begin, replacing: true)
    }

    /// A new utterance reached speech-dispatcher: it must begin within `beginBound`, whatever the wait was.
    func noteArrival() {
        stallWait = timings.begin
        armStallCheck(after: timings.begin, replacing: false)
    }

    /// Disarms the check when nothing of ours is left in speech-dispatcher, arms it otherwise.
    func watchForStall() {
        guard case .connected = phase, anythingInEngine else {
            stallCheck?.cancel()
            stallCheck = nil
            stallDeadline = nil
            stallWait = timings.begin
            return
        }
        armStallCheck(after: stallWait, replacing: false)
    }

    /// Arms the check `seconds` from now; an armed one is kept if it comes sooner, unless `replacing`.
    private func armStallCheck(after seconds: Double, replacing: Bool) {
        guard case .connected = phase, anythingInEngine, !stallProbing else { return }
        let deadline = DispatchTime.now() + seconds
        if let armed = stallDeadline, !replacing, armed <= deadline { return }
        stallCheck?.cancel()
        let check = DispatchWorkItem { [weak self] in self?.onQueue { $0.checkStall() } }
        stallCheck = check
        stallDeadline = deadline
        queue.asyncAfter(deadline: deadline, execute: check)
    }

    private func checkStall() {
        stallCheck = nil
        stallDeadline = nil
        guard case .connected(let link) = phase, anythingInEngine else { return }
        let waited = stallWait
        let speaking = utterances.values.first { if case .speaking = $0.stage { true } else { false } }
        let module = speaking?.request.voice?.engine ?? link.defaultModule
        stallProbing = true
        stallProgress = false
        let generation = link.generation
        SpeechdProbe.health(configuration, timeout: configuration.probeTimeout ?? timings.reply, module: module) { [weak self] verdict in
            guard let self else { return }
            self.queue.async { self.onQueue { $0.judgeStall(after: waited, verdict, generation: generation) } }
        }
    }

    private func judgeStall(after waited: Double, _ verdict: SpeechdProbe.Verdict, generation: UInt64) {
        guard case .connected(let link) = phase, link.generation == generation else { return }
        stallProbing = false
        guard anythingInEngine else { return watchForStall() }
        switch verdict {
        case .wedged(let why) where !stallProgress:
            let speaking = utterances.values.contains { if case .speaking = $0.stage { true } else { false } }
            let what = speaking ? "stopped speaking: nothing for \(SpeechdTimings.text(waited))"
                                : "did not begin speaking within \(SpeechdTimings.text(waited))"
            recover(.stalled("speech-dispatcher \(what), and its output module did not answer (\(why))"))
        default:
            // Busy speaking (ours, or another program's), or it moved on meanwhile: look again later.
            if !stallProgress {
                log("speech: speech-dispatcher made no progress in \(SpeechdTimings.text(waited)) but its output module answers: waiting on")
                stallWait = min(stallWait * 2, timings.stallLimit)
            }
            armStallCheck(after: stallWait, replacing: true)
        }
    }
}
