import VoiceboxContract

/// Following the server: its streams as they come, change and go; a server that goes away and
/// comes back. Detection follows the mixer's events: nothing is polled.
extension AudioSession {
    func handle(_ event: MixerEvent) async {
        switch event {
        case .serverReady:
            await serverReady()
        case .serverLost:
            serverWentAway()
            await setCalls([])
        case .playbackChanged(let stream):
            await playbackChanged(stream)
        case .playbackRemoved(let id):
            streams[id] = nil
            firstSeen[id] = nil
            repaired.remove(id)  // (the server gives its index to a later stream)
            endAfterCare(id)
            await updateCall("p\(id)", false)
        case .recordingChanged(let recording):
            await updateCall("r\(recording.id)", kinds.isActiveCall(recording))
        case .recordingRemoved(let id):
            await updateCall("r\(id)", false)
        case .rememberedChanged:
            await memoryChanged()
        }
    }

    /// Connected (again): what a crash or the server's going away left is undone first; an
    /// interruption in progress then takes the server's streams as they are now.
    private func serverReady() async {
        server = nil
        streams = [:]
        firstSeen = [:]
        repaired = []
        _ = await serverInfo()
        let list = await listStreams() ?? []
        await recoverLeftover(list)
        await repairPendingMemory(list)
        if let current = others { await apply(current.policy) }
        var active: Set<String> = []
        for stream in streams.values where kinds.isActiveCall(stream) { active.insert("p\(stream.id)") }
        do {
            for recording in try await mixer.recordingStreams() where kinds.isActiveCall(recording) { active.insert("r\(recording.id)") }
        } catch {
            log("cannot list the recording streams: \(error)")
        }
        await setCalls(active)
    }

    /// The server went away mid-interruption: the streams we changed went with it, but it may have
    /// remembered our changes (PulseAudio keeps its memory on disk; WirePlumber outlives
    /// pipewire-pulse). Their entries are kept, journaled, to be put back when it returns.
    private func serverWentAway() {
        server = nil
        streams = [:]
        firstSeen = [:]
        afterCare = [:]
        guard var current = others else { return }
        addPending(current.memory)
        current.muted = []
        current.ducked = []
        current.memory = []
        current.trigger = nil
        others = current
        saveJournal()
    }

    private func playbackChanged(_ stream: PlaybackStream) async {
        let previous = streams[stream.id]
        if let previous { setByTheUser(stream, previous: previous) }
        note(stream)
        // A stream that starts corked and begins to play a moment later (pipewire-pulse reports a
        // new paplay stream so) starts playing now: a newcomer too.
        let startsPlaying = previous == nil || (previous?.corked == true && !stream.corked)
        await updateCall("p\(stream.id)", kinds.isActiveCall(stream))
        if let fixed = await repairInherited(stream) {
            if startsPlaying { await interruptNewcomer(fixed) }
            return
        }
        guard let current = others else { return }
        if current.isChanged(stream.id) {
            await changedByOthers(stream)
            scheduleMemoryRewrite()
        } else if startsPlaying {
            await interruptNewcomer(stream)
        }
    }
}
