import VoiceboxContract

/// Voicebox interrupting others: overlapping and back-to-back activities (within `grace`) make one
/// interruption. What is changed is written to the journal first and restored exactly: a stream
/// the user unmuted or moved meanwhile keeps the user's setting.
extension AudioSession {
    func interruptOthers(_ activity: Activity, policy: OthersPolicy) async {
        if let current = others {
            // A stronger policy joins the interruption in progress (a dictation during a ducked reply).
            guard policy > current.policy else { return }
            others?.policy = policy
            await apply(policy)
            return
        }
        others = OthersInterruption(reason: activity.reason, id: activity.id, policy: policy)
        await apply(policy)
        updateInterrupted()
        if let others { bus.emit(Speech1.audioInterruption, .began, others.info(shouldResume: nil)) }
    }

    /// Pauses players and silences streams (`pause`), or lowers streams (`duck`).
    func apply(_ policy: OthersPolicy) async {
        if policy == .pause { await pausePlayers() }
        let info = await serverInfo()
        guard let list = await listStreams(), let current = others else { return }
        let playerProcesses = Set(current.players.compactMap(\.processID))
        let candidates = list.filter { kinds.isOthers($0) && !$0.corked && !playerProcesses.contains($0.processID ?? -1) }
        switch policy {
        // (A stream already ducked is muted too when a pause joins a duck.)
        case .pause: await silence(candidates.filter { !$0.muted && !current.isMuted($0.id) }, info: info)
        case .duck: await duck(candidates.filter { !current.isChanged($0.id) })
        case .mix: break
        }
    }

    /// Every MPRIS player playing now gets Pause(), all at once, each bounded by the players' timeout.
    private func pausePlayers() async {
        guard let current = others else { return }
        let playing = await players.playing().filter { !current.players.contains($0) }
        guard !playing.isEmpty, commit({ $0.players += playing }) else { return }
        let paused = await withTaskGroup(of: MediaPlayer?.self) { group in
            for player in playing { group.addTask { await self.players.pause(player) ? player : nil } }
            var done: [MediaPlayer] = []
            for await player in group { if let player { done.append(player) } }
            return done
        }
        let refused = playing.filter { !paused.contains($0) }
        if !refused.isEmpty {
            log("players did not pause: \(refused.map(\.name).joined(separator: ", "))")
            commit { $0.players.removeAll { refused.contains($0) } }
        }
    }

    /// Silences `streams`: where module-role-cork can (PulseAudio), its cork roles are corked by
    /// the server itself while our trigger plays, and their clients are asked to pause; the rest
    /// are muted.
    private func silence(_ streams: [PlaybackStream], info: SoundServerInfo?) async {
        var toMute = streams
        if let info, info.hasRoleCork, !info.isPipeWire, others?.trigger == nil, let role = info.roleCorkTriggers.first {
            let targets = Set(info.roleCorkTargets.map { $0.lowercased() })
            let corkable = toMute.filter { targets.contains($0.role?.lowercased() ?? "") }
            if !corkable.isEmpty, let corked = await cork(corkable, role: role) {
                toMute.removeAll { corked.contains($0.id) }
            }
        }
        guard !toMute.isEmpty else { return }
        let records = await memoryBefore(toMute)
        guard commit({ interruption in
            interruption.keep(records)
            for stream in toMute {
                interruption.muted.append(.init(muting: stream))
                interruption.markMuted(stream.memoryKey)
            }
        }) else { return }
        for stream in toMute {
            await attempt("mute", stream) { try await mixer.setMute(stream.id, true) }
        }
        await writeMemoryBack()
    }

    /// Starts the cork trigger; returns the streams the module silenced (it acts when the trigger
    /// appears, and only on the trigger's sink unless it was loaded global), nil if it did not start.
    private func cork(_ corkable: [PlaybackStream], role: String) async -> Set<UInt32>? {
        // Our trigger is a stream of that role: the server makes itself an entry for it, deleted again afterwards.
        let records = await memoryBefore(names: ["sink-input-by-media-role:" + role])
        guard commit({ $0.keep(records) }) else { return nil }
        let trigger: UInt32
        do {
            trigger = try await mixer.startCorkTrigger(role: role)
        } catch {
            log("cannot start the cork trigger (role \(role)): \(error)")
            return nil
        }
        let after = Dictionary(((await listStreams()) ?? []).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let corked = corkable.filter { after[$0.id].map { $0.corked || $0.muted } ?? false }
        others?.trigger = trigger
        others?.corked += UInt32(corked.count)
        return Set(corked.map(\.id))
    }

    /// Lowers every stream by `duckDecibels` as heard, from the user's level.
    private func duck(_ streams: [PlaybackStream]) async {
        guard !streams.isEmpty else { return }
        let records = await memoryBefore(streams)
        let lowered = streams.map { stream in
            let original = userLevel(of: stream, records: records)
            return (stream, original, mixer.attenuate(original, byDecibels: settings.duckDecibels))
        }
        guard commit({ interruption in
            interruption.keep(records)
            for (stream, original, ours) in lowered {
                interruption.ducked.append(.init(ducking: stream, from: original, to: ours))
                interruption.markLevel(stream.memoryKey, ours, from: original)
            }
        }) else { return }
        for (stream, _, ours) in lowered where stream.volume != ours {
            await attempt("lower the volume of", stream) { try await mixer.setVolume(stream.id, ours) }
        }
        await writeMemoryBack()
    }

    /// The level its application has without Voicebox: its own, unless it started from a level we
    /// set on an earlier stream of its application or role (the server remembered it).
    private func userLevel(of stream: PlaybackStream, records: [MemoryRecord]) -> [UInt32] {
        let record = others?.record(stream.memoryKey) ?? records.first { $0.name == stream.memoryKey }
        guard let record, record.isInherited(volume: stream) else { return stream.volume }
        return record.userLevel(channels: stream.volume.count) ?? stream.volume
    }

    /// A stream that starts (or starts playing) while others are interrupted is treated as they
    /// were; one that started from our mute (the server remembered it) is taken as ours.
    func interruptNewcomer(_ stream: PlaybackStream) async {
        guard let current = others, kinds.isOthers(stream), !stream.corked, !current.isChanged(stream.id) else { return }
        if current.players.contains(where: { $0.processID != nil && $0.processID == stream.processID }) { return }
        switch current.policy {
        case .pause:
            if !stream.muted {
                await silence([stream], info: server)
            } else if let record = current.record(stream.memoryKey) ?? pendingMemory.first(where: { $0.name == stream.memoryKey }),
                      record.isInherited(mute: stream) {
                commit { interruption in
                    interruption.keep([record])
                    interruption.muted.append(.init(muting: stream))
                }
            }
        case .duck:
            await duck([stream])
        case .mix:
            break
        }
    }

    /// A stream we changed changed again, not by us, on pipewire-pulse, where the server's memory
    /// says nothing of itself: WirePlumber applying its memory (it does so a moment after a stream
    /// appears, so within `serverRestoreWindow` of its start), or the user. Either way the stream
    /// now shows what WirePlumber keeps for it, and that is the entry to put back. WirePlumber's
    /// change is undone (the stream is muted or lowered again, from its new level); the user's is
    /// the user's, and kept. (PulseAudio applies its memory as a stream is made, and reports its
    /// saves: see memoryChanged.)
    func changedByOthers(_ stream: PlaybackStream) async {
        guard server?.memory == .writeOnly, var current = others else { return }
        let ducked = current.ducked.first { $0.id == stream.id }
        let undone = (current.isMuted(stream.id) && !stream.muted) || ducked.map { stream.volume != $0.ourVolume } == true
        guard undone else { return }
        if let record = current.record(stream.memoryKey), var before = record.before {
            if !record.isInherited(mute: stream) { before.muted = stream.muted }
            if !record.isInherited(volume: stream) { before.volume = stream.volume }
            provisional[record.name] = nil
            if before != record.before {
                commit { interruption in
                    if let index = interruption.memory.firstIndex(where: { $0.name == record.name }) { interruption.memory[index].before = before }
                }
                current = others ?? current
            }
        }
        guard let seen = firstSeen[stream.id], clock.now - seen < serverRestoreWindow else { return }
        if current.isMuted(stream.id), !stream.muted {
            await attempt("mute", stream) { try await mixer.setMute(stream.id, true) }
        } else if let entry = ducked, stream.volume != entry.ourVolume {
            let original = current.record(stream.memoryKey).flatMap { record in
                record.isInherited(volume: stream) ? record.userLevel(channels: stream.volume.count) : nil
            } ?? stream.volume
            let ours = mixer.attenuate(original, byDecibels: settings.duckDecibels)
            guard commit({ interruption in
                guard let index = interruption.ducked.firstIndex(where: { $0.id == stream.id }) else { return }
                interruption.ducked[index].originalVolume = original
                interruption.ducked[index].ourVolume = ours
                interruption.markLevel(stream.memoryKey, ours, from: original)
            }) else { return }
            if stream.volume != ours {
                await attempt("lower the volume of", stream) { try await mixer.setVolume(stream.id, ours) }
            }
        }
    }

    /// Gives others back exactly what was taken and the user has not changed since, puts the
    /// server's memory back as it was, and announces the end.
    func restoreOthers() async {
        guard let done = others else { return }
        cancelRestore()
        let now = await listStreams() ?? Array(streams.values)
        let current = Dictionary(now.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        // Entries whose stream we set back to just what they held: the server saves that itself.
        var savedByServer: Set<String> = []
        var setBackStreams: [PlaybackStream] = []
        func setBack(_ stream: PlaybackStream, muted: Bool, volume: [UInt32]) {
            var now = stream
            now.muted = muted
            now.volume = volume
            setBackStreams.append(now)
            guard let key = stream.memoryKey, let before = done.record(key)?.before, before.muted == muted, before.volume == volume else { return }
            savedByServer.insert(key)
        }
        for muted in done.muted {
            // Still muted: ours to undo. Unmuted: the user did it, and keeps it.
            guard let stream = current[muted.id], muted.matches(stream), stream.muted else { continue }
            if await attempt("unmute", stream, { try await mixer.setMute(muted.id, false) }) {
                setBack(stream, muted: false, volume: stream.volume)
            }
        }
        for ducked in done.ducked {
            guard let stream = current[ducked.id], ducked.matches(stream), stream.volume == ducked.ourVolume,
                  let original = ducked.originalVolume else { continue }
            if await attempt("restore the volume of", stream, { try await mixer.setVolume(ducked.id, original) }) {
                setBack(stream, muted: stream.muted, volume: original)
            }
        }
        if done.trigger != nil { await mixer.stopCorkTrigger() }
        await withTaskGroup(of: Void.self) { group in
            for player in done.players { group.addTask { _ = await self.players.resumeIfStillPaused(player) } }
        }
        others = nil
        // The memory last: restoring a stream had the server save it again. WirePlumber saves a
        // stream we set back as it was to the digit, where a write through pipewire-pulse would
        // round it: there those are left to WirePlumber.
        let leftToServer = server?.memory == .writeOnly ? savedByServer : []
        await putBack(done.memory.filter { !leftToServer.contains($0.name) })
        // An entry that still waited (see `waiting(_:)`) waits for what the server saves now, and
        // is let go once the server shows it.
        let stillWaiting = done.memory.filter { record in leftToServer.contains(record.name) && pendingMemory.contains { $0.name == record.name } }
        if !stillWaiting.isEmpty {
            addPending(stillWaiting)
            startPendingChecks()
        }
        startAfterCare(done.memory, setBack: setBackStreams)
        saveJournal()
        updateInterrupted()
        bus.emit(Speech1.audioInterruption, .ended, done.info(shouldResume: true))
    }
}
