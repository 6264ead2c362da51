import VoiceboxContract

/// Memory put back where the server did not list it in time (pipewire-pulse: WirePlumber, which
/// holds the metadata it goes through, was busy; it was seen here falling a minute behind). The
/// entries stay journaled, and the server is asked again at growing intervals, for about two
/// minutes, whether it holds them now: an entry it holds as given is let go. It is only asked:
/// writing again could write over what the user or a new interruption set meanwhile. An entry
/// still not held after that waits, as before, for the server's return or the next start.
extension AudioSession {
    /// The waits before each check, from the failed write on, in memory-check-first (1 s as standard).
    static let pendingCheckMultiples = [1, 2, 4, 8, 16, 30, 60]

    /// A put-back was not confirmed: the checks start again from the first wait.
    func startPendingChecks() {
        guard server?.memory == .writeOnly, !finished else { return }
        pendingChecks = 0
        schedulePendingCheck()
    }

    /// Lets go of the pending entries the server now holds as given, and asks again later while
    /// some are left (`last`, at shutdown: once, with no later check).
    func checkPendingMemory(last: Bool = false) async {
        guard server?.memory == .writeOnly else { return }
        let given = waitingSettings
        guard !given.isEmpty else { return }
        do {
            let arrived = try await mixer.heldAsGiven(given)
            if !arrived.isEmpty {
                pendingMemory.removeAll { arrived.contains($0.name) }
                log("the sound server now holds what was put back of \(arrived.sorted().joined(separator: ", "))")
                saveJournal()
            }
        } catch {
            log("cannot ask the sound server what it holds of \(given.map(\.name).joined(separator: ", ")): \(error)")
        }
        if !last, !finished { schedulePendingCheck() }
    }

    /// Records to wait for the server. One of an entry that already waits started from the waiting
    /// one (see `waiting(_:)`), and may since hold the user's change: it takes its place.
    func addPending(_ records: [MemoryRecord]) {
        for record in records {
            if let index = pendingMemory.firstIndex(where: { $0.name == record.name }) {
                pendingMemory[index] = record.withMarks(of: pendingMemory[index])
            } else {
                pendingMemory.append(record)
            }
        }
    }

    /// The records a new interruption keeps, where an entry still waits to be put back. While the
    /// entry (or its stream) shows what the waiting record kept or a change of ours, which the
    /// server never let go of, the waiting record is kept: its marks let a stream that started from
    /// our change be treated from the user's level. Anything else is the user's since: the fresh
    /// record replaces the waiting one. `young`: streams the server has not yet given their
    /// entry (see changedByOthers, which takes up what it gives them).
    func waiting(_ records: [MemoryRecord], young: Set<String> = []) -> [MemoryRecord] {
        records.map { record in
            guard let index = pendingMemory.firstIndex(where: { $0.name == record.name }) else { return record }
            let waiting = pendingMemory[index]
            if young.contains(record.name) || waiting.accounts(for: record.before) { return waiting }
            log("\(record.name) was set since its put-back waits: that setting replaces it")
            pendingMemory.remove(at: index)
            return record
        }
    }

    /// pipewire-pulse, whose memory says nothing of itself: a stream of an entry that waits was
    /// changed, after the server gave it its entry and not by us in an interruption. Set to what
    /// the record kept (by the user, or as we set it back), the server is asked again whether it
    /// saved that; set to anything but a change of ours, it is the user's setting, which the
    /// server saves, and the waiting record has nothing left to put back.
    func setByTheUser(_ stream: PlaybackStream, previous: PlaybackStream) {
        guard server?.memory == .writeOnly, stream.muted != previous.muted || stream.volume != previous.volume,
              let index = pendingMemory.firstIndex(where: { $0.name == stream.memoryKey }),
              others?.isChanged(stream.id) != true,
              let seen = firstSeen[stream.id], clock.now - seen >= serverRestoreWindow else { return }
        let record = pendingMemory[index]
        if record.isInherited(mute: stream) || record.isInherited(volume: stream) { return }
        if let kept = record.before, stream.muted == kept.muted, kept.volume.map({ MemoryRecord.isAlike($0, stream.volume) }) ?? true {
            return startPendingChecks()
        }
        log("\(record.name) was set since its put-back waits: that setting replaces it")
        pendingMemory.remove(at: index)
        saveJournal()
    }

    /// PulseAudio, whose memory can be read, saved something: a waiting entry it holds as it was,
    /// or as the user set it since (neither that nor a change of ours), waits no more.
    func letGoHeld(_ held: [String: RememberedSetting]) {
        let before = pendingMemory.count
        pendingMemory.removeAll { held[$0.name] == $0.before || !$0.accounts(for: held[$0.name]) }
        if pendingMemory.count != before { saveJournal() }
    }

    /// Entries just put back as the server now holds them wait no more.
    func letGo(_ records: [MemoryRecord]) {
        let names = Set(records.map(\.name))
        guard pendingMemory.contains(where: { names.contains($0.name) }) else { return }
        pendingMemory.removeAll { names.contains($0.name) }
        saveJournal()
    }

    /// What waits to be written (an entry that did not exist has nothing to write, on a server
    /// that cannot delete). Names are unique in `pendingMemory`.
    private var waitingSettings: [RememberedSetting] { pendingMemory.compactMap(\.before) }

    private func schedulePendingCheck() {
        pendingCheckGeneration += 1
        pendingCheckTimer?.cancel()
        pendingCheckTimer = nil
        let waiting = waitingSettings.map(\.name)
        guard !waiting.isEmpty else { return }
        guard pendingChecks < pendingCheckDelays.count else {
            return log("the sound server still does not hold what was put back of \(waiting.joined(separator: ", ")): "
                       + "it is written again when the server returns or at the next start")
        }
        let generation = pendingCheckGeneration
        pendingCheckTimer = clock.schedule(after: pendingCheckDelays[pendingChecks]) { [inputSink] in
            inputSink.yield(.pendingCheckDue(generation))
        }
        pendingChecks += 1
    }
}
