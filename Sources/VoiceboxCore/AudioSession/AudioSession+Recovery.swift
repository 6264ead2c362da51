import VoiceboxContract

/// Crash recovery, and the server's memory after the server went away: what a voiceboxd that died
/// mid-interruption left changed is undone as `restoreOthers` would have, once the server is
/// reached; the memory entries it journaled are put back; a stream that started from a change of
/// ours the server remembered (while nobody was there to put it back) is set back to the user's
/// level; and the interruption's `ended` is announced, with what was given back.
extension AudioSession {
    func recoverLeftover(_ list: [PlaybackStream]) async {
        guard let left = leftover else { return }
        leftover = nil
        let current = Dictionary(list.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var unmuted: UInt32 = 0, restored: UInt32 = 0
        var handled: Set<UInt32> = []
        for muted in left.muted {
            guard let stream = current[muted.id], muted.matches(stream), stream.muted else { continue }
            if await attempt("unmute", stream, { try await mixer.setMute(stream.id, false) }) { unmuted += 1 }
            handled.insert(stream.id)
        }
        for ducked in left.ducked {
            guard let stream = current[ducked.id], ducked.matches(stream), stream.volume == ducked.ourVolume,
                  let original = ducked.originalVolume else { continue }
            if await attempt("restore the volume of", stream, { try await mixer.setVolume(stream.id, original) }) { restored += 1 }
            handled.insert(stream.id)
        }
        // Streams first, then the memory: setting a stream back had the server save it.
        startRepair(left.memory)
        for stream in list where !handled.contains(stream.id) {
            guard let fixed = await repairInherited(stream) else { continue }
            if fixed.muted != stream.muted { unmuted += 1 }
            if fixed.volume != stream.volume { restored += 1 }
        }
        let theUsers = await changedByTheUser(left, streams: current)
        for name in theUsers.sorted() { log("leaving \(name) as the sound server remembers it: the user changed it meanwhile") }
        await putBack(left.memory.filter { !theUsers.contains($0.name) })
        let resumed = await withTaskGroup(of: String?.self) { group in
            for player in left.players { group.addTask { await self.players.resumeIfStillPaused(player) ? player.name : nil } }
            var names: [String] = []
            for await name in group { if let name { names.append(name) } }
            return names.sorted()
        }
        saveJournal()
        bus.emit(Speech1.audioInterruption, .ended, InterruptionInfo(reason: left.reason ?? .speaking, id: left.id ?? 0, shouldResume: true,
                                                             pausedPlayers: resumed, mutedStreams: unmuted, duckedStreams: restored))
    }

    /// Entries the user changed while no voiceboxd was there hold the user's new settings, not ours
    /// to put back: on PulseAudio (read after the streams were set back) one that holds neither what
    /// it held before nor a change of ours; on pipewire-pulse, whose memory cannot be read, one with a
    /// stream of ours that the user set to something else.
    private func changedByTheUser(_ left: InterruptionJournal, streams current: [UInt32: PlaybackStream]) async -> Set<String> {
        var names: Set<String> = []
        switch await knownServer()?.memory ?? .nothing {
        case .nothing:
            break
        case .readWrite:
            do {
                let held = try await rememberedByName()
                for record in left.memory {
                    guard let now = held[record.name], now != record.before, !record.shows(now) else { continue }
                    if record.before == nil, MemoryRecord.isBlank(now) { continue }
                    names.insert(record.name)
                }
            } catch {
                log("cannot read what the sound server remembers: \(error)")
            }
        case .writeOnly:
            for ducked in left.ducked {
                guard let key = ducked.memoryKey, let stream = current[ducked.id], ducked.matches(stream),
                      let ours = ducked.ourVolume, stream.volume != ours else { continue }
                names.insert(key)
            }
            for muted in left.muted {
                guard let key = muted.memoryKey, let stream = current[muted.id], muted.matches(stream), !stream.muted else { continue }
                names.insert(key)
            }
        }
        return names
    }

    /// The server is back after it went away mid-interruption: the entries it may have kept of our
    /// changes are put back, and streams that started from them set back.
    func repairPendingMemory(_ list: [PlaybackStream]) async {
        guard !pendingMemory.isEmpty else { return }
        let records = pendingMemory
        pendingMemory = []
        startRepair(records)
        for stream in list { _ = await repairInherited(stream) }
        await putBack(records)
        saveJournal()
    }

    /// Streams that start within `serverRestoreWindow` from now are checked against `records` too
    /// (WirePlumber applies its memory a moment after a stream appears).
    private func startRepair(_ records: [MemoryRecord]) {
        guard !records.isEmpty else { return }
        repairing = records
        repairUntil = clock.now + serverRestoreWindow
    }

    /// A stream, seen within the repair window or while its entry waits to be put back, that shows
    /// a change of ours it got from the server's memory (muted, or at a level we set) is set back
    /// to the user's level, once. Returns it as it now is; nil if there was nothing to do.
    /// PulseAudio applies its memory as it makes a stream, so a stream it first shows with nothing
    /// of ours started from the user's setting: what it shows later is the user's doing, and it is
    /// not looked at again. (WirePlumber applies memory a moment after a stream appears: there the
    /// window decides.)
    func repairInherited(_ stream: PlaybackStream) async -> PlaybackStream? {
        if let until = repairUntil, clock.now >= until {
            repairing = []
            repairUntil = nil
        }
        guard let record = inheritable(stream), kinds.isOthers(stream),
              !repaired.contains(stream.id), others?.isChanged(stream.id) != true else { return nil }
        guard record.isInherited(mute: stream) || record.isInherited(volume: stream) else {
            if server?.memory == .readWrite { repaired.insert(stream.id) }
            return nil
        }
        var fixed = stream
        if record.isInherited(mute: stream),
           await attempt("unmute", stream, { try await mixer.setMute(stream.id, false) }) {
            fixed.muted = false
        }
        if record.isInherited(volume: stream), let level = record.userLevel(channels: stream.volume.count),
           await attempt("restore the volume of", stream, { try await mixer.setVolume(stream.id, level) }) {
            fixed.volume = level
        }
        guard fixed != stream else { return nil }
        repaired.insert(stream.id)
        note(fixed)
        // The server saves the stream as set back: a waiting entry may now hold the user's setting.
        if pendingMemory.contains(where: { $0.name == record.name }) { startPendingChecks() }
        return fixed
    }

    /// The record a stream may have started from a change of ours by: one put back after a crash
    /// or the server's return (within the repair window), or one that still waits, for a stream
    /// the server is giving its entry (within `serverRestoreWindow` of its start) while no
    /// interruption takes newcomers (one that does treats it from the waiting record: raised
    /// first, it would burst out over the speech).
    private func inheritable(_ stream: PlaybackStream) -> MemoryRecord? {
        if let record = repairing.first(where: { $0.name == stream.memoryKey }) { return record }
        guard let seen = firstSeen[stream.id], clock.now - seen < serverRestoreWindow,
              others.map({ $0.policy == .mix }) ?? true else { return nil }
        return pendingMemory.first { $0.name == stream.memoryKey }
    }
}
