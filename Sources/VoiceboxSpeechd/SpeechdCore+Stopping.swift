import Dispatch

/// Stopping, pausing and resuming: bookkeeping on the owner's queue, then a command queued on the
/// connection; none of it waits for speech-dispatcher (a wedged server cannot hold up a stop).
extension SpeechdCore {
    func stopOnQueue(_ ids: [UInt64]) {
        let targets = Set(ids).compactMap { utterances[$0] }.sorted { $0.sequence < $1.sequence }
        guard !targets.isEmpty else { return }
        let inEngine = utterances.values.filter(isInEngine).count
        let targetsInEngine = targets.filter(isInEngine).count
        // CANCEL SELF when all of ours go; else STOP SELF for the one being spoken and a stop at the
        // begin of each queued one.
        let cancelAll = targetsInEngine > 0 && targetsInEngine == inEngine
        var stopCurrent = false
        for utterance in targets {
            switch utterance.stage {
            case .held:
                break
            case .submitting(let token):
                if activeSubmission?.token == token && activeSubmission?.speakSent == true {
                    orphans[token] = .ghost(stopOnBegin: !cancelAll)
                }
            case .queued(let messageID):
                tracks[messageID] = .ghost(stopOnBegin: !cancelAll)
            case .speaking(let messageID):
                tracks[messageID] = .ghost(stopOnBegin: false)
                stopCurrent = true
            }
            finish(utterance.request.id, .cancelled)
        }
        watchForStall()
        guard case .connected(let link) = phase else { return }
        if cancelAll {
            command("CANCEL", on: link)
        } else if stopCurrent {
            command("STOP", on: link)
        }
    }

    /// Whether speech-dispatcher has (or is about to get) this utterance's message.
    func isInEngine(_ utterance: Utterance) -> Bool {
        switch utterance.stage {
        case .held: false
        case .queued, .speaking: true
        case .submitting(let token): activeSubmission?.token == token && activeSubmission?.speakSent == true
        }
    }

    /// speech-dispatcher 0.11.4's own PAUSE wedges the whole server when it arrives after the output
    /// module has synthesized the message (no more speech for any client until it restarts; upstream
    /// brailcom/speechd#813, fixed in 0.12), and drops the rest of the message otherwise. So pausing
    /// takes our messages back instead: CANCEL SELF, keep them here, and resume() gives them again
    /// (the one that was being spoken starts over). Their notices in between are swallowed and no
    /// second `.started` is reported.
    func pauseOnQueue() {
        guard !paused else { return }
        paused = true
        var any = false
        for (id, utterance) in utterances {
            if isInEngine(utterance) { any = true }
            switch utterance.stage {
            case .held:
                continue
            case .submitting(let token):
                if activeSubmission?.token == token && activeSubmission?.speakSent == true {
                    orphans[token] = .ghost(stopOnBegin: false)
                }
            case .queued(let messageID), .speaking(let messageID):
                tracks[messageID] = .ghost(stopOnBegin: false)
            }
            utterances[id]?.stage = .held
        }
        watchForStall()
        if any, case .connected(let link) = phase { command("CANCEL", on: link) }
    }

    func resumeOnQueue() {
        guard paused else { return }
        paused = false
        let held = utterances.values.filter { if case .held = $0.stage { true } else { false } }
            .sorted { $0.sequence < $1.sequence }
        for utterance in held { enqueueSubmission(of: utterance.request.id, waiter: nil) }
        pumpSubmissions()
    }

    /// STOP SELF / CANCEL SELF: queued, never waited for (a wedged server cannot hold up a stop); a
    /// reply that does not come in time drops the connection like any other.
    func command(_ verb: String, on link: Link) {
        link.connection.send(SSIPText.command(verb, "self")) { _ in }
    }
}
