import VoiceboxContract

/// The server's memory. PulseAudio's module-stream-restore and WirePlumber's restore-stream save a
/// stream's volume and mute by application or role whenever a client changes them (Voicebox
/// included), and start the next stream of that application or role from what they saved. So
/// before a stream is changed, its entry is read (PulseAudio) or taken from the stream (pipewire-pulse,
/// whose WirePlumber saves each stream's own as it changes, and which cannot be read back) and
/// journaled; after every change it is written back as it was; and while the interruption lasts
/// it is kept so: PulseAudio saves a changed stream again at each of its changes and says so
/// (`rememberedChanged`), WirePlumber saves on its own time and says nothing, so there it is
/// written again shortly after each change to such a stream. At the end it is put back once more,
/// after the streams, and an entry that did not exist (our cork trigger's) is deleted.
extension AudioSession {
    /// What the server is: as last read, or read now.
    func knownServer() async -> SoundServerInfo? {
        if let server { return server }
        return await serverInfo()
    }

    /// The records of the memory entries of `streams` not yet kept.
    func memoryBefore(_ streams: [PlaybackStream]) async -> [MemoryRecord] {
        let kept = Set((others?.memory ?? []).map(\.name))
        var wanted: [String: PlaybackStream] = [:]
        for stream in streams {
            guard let key = stream.memoryKey, !kept.contains(key), wanted[key] == nil else { continue }
            wanted[key] = stream
        }
        guard !wanted.isEmpty else { return [] }
        switch await knownServer()?.memory ?? .nothing {
        case .nothing:
            return []
        case .writeOnly:
            var young: Set<String> = []
            let records = wanted.sorted { $0.key < $1.key }.map { key, stream in
                // WirePlumber applies its memory a moment after a stream appears: until then a young
                // stream's own level may not be it (see changedByOthers).
                if let seen = firstSeen[stream.id], clock.now - seen < serverRestoreWindow {
                    provisional[key] = seen + serverRestoreWindow
                    young.insert(key)
                }
                return MemoryRecord(name: key, before: RememberedSetting(name: key, muted: stream.muted, volume: stream.volume,
                                                                         channelMap: stream.channelMap))
            }
            return waiting(records, young: young)
        case .readWrite:
            return waiting(await read(names: wanted.keys.sorted()))
        }
    }

    /// What the server remembers, by entry name (PulseAudio).
    func rememberedByName() async throws -> [String: RememberedSetting] {
        Dictionary(try await mixer.rememberedSettings().map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The records of entries `names` not yet kept, as the server holds them (PulseAudio only).
    func memoryBefore(names: [String]) async -> [MemoryRecord] {
        let kept = Set((others?.memory ?? []).map(\.name))
        let wanted = names.filter { !kept.contains($0) }
        guard !wanted.isEmpty, await knownServer()?.memory == .readWrite else { return [] }
        return waiting(await read(names: wanted))
    }

    private func read(names: [String]) async -> [MemoryRecord] {
        do {
            let held = try await rememberedByName()
            return names.map { MemoryRecord(name: $0, before: held[$0]) }
        } catch {
            // Unread, the entries cannot be put back: the change is made all the same (the user
            // hears it undone at the end), and the log says what the server may keep.
            log("cannot read what the sound server remembers of \(names.joined(separator: ", ")): \(error)")
            return []
        }
    }

    /// Writes the entries of the interruption in progress back as they were before it (those not
    /// yet known for sure a moment later).
    func writeMemoryBack() async {
        guard let current = others, server?.memory != .nothing else { return }
        let now = clock.now
        provisional = provisional.filter { $0.value > now }
        let settings = current.memory.filter { provisional[$0.name] == nil }.compactMap(\.before)
        if let next = provisional.values.min() { scheduleMemoryRewrite(after: next - now) }
        guard !settings.isEmpty else { return }
        await attempt("put back what the sound server remembers of \(settings.map(\.name).joined(separator: ", "))") {
            try await mixer.remember(settings)
        }
    }

    /// After a change to a stream we changed, where the server does not say when it saved it
    /// (pipewire-pulse): the memory is written back again a moment later.
    func scheduleMemoryRewrite(after delay: Duration? = nil) {
        let delay = delay ?? memorySettleDelay
        guard server?.memory == .writeOnly, others?.memory.isEmpty == false else { return }
        memoryGeneration += 1
        memoryTimer?.cancel()
        let generation = memoryGeneration
        memoryTimer = clock.schedule(after: delay) { [inputSink] in inputSink.yield(.memoryDue(generation)) }
    }

    /// PulseAudio saved something: an entry that now holds our change is written back; one the
    /// user changed (another volume, a stream unmuted by hand) is the user's new setting, and kept.
    func memoryChanged() async {
        let interrupting = others.map { !$0.memory.isEmpty } ?? false
        guard interrupting || !afterCare.isEmpty || !pendingMemory.isEmpty else { return }
        let held: [String: RememberedSetting]
        do {
            held = try await rememberedByName()
        } catch {
            return log("cannot read what the sound server remembers: \(error)")
        }
        letGoHeld(held)
        await careAfter(held)
        guard let current = others else { return }
        var ours = false
        var adopted: [String: RememberedSetting?] = [:]
        for record in current.memory {
            let now = held[record.name]
            if now == record.before { continue }
            if record.before == nil, now.map(MemoryRecord.isBlank) ?? true { continue }
            if let now, record.shows(now) { ours = true } else { adopted[record.name] = now }
        }
        if !adopted.isEmpty {
            commit { interruption in
                for index in interruption.memory.indices {
                    if let setting = adopted[interruption.memory[index].name] { interruption.memory[index].before = setting }
                }
            }
        }
        if ours { await writeMemoryBack() }
    }

    /// After an interruption (PulseAudio): a stream we set back still has the server save its state
    /// at each of its changes (a pause, a play), which would give an entry that held no volume the
    /// stream's. While the stream plays, a save that holds just what we gave it back is undone;
    /// anything else is the user's, and ends the care of that entry.
    private func careAfter(_ held: [String: RememberedSetting]) async {
        var rewrite: [RememberedSetting] = []
        for (name, care) in afterCare {
            let now = held[name]
            if now == care.before { continue }
            guard let now, let before = care.before, now.muted == care.muted, now.volume == nil || now.volume == care.volume,
                  now.device == before.device else {
                afterCare[name] = nil
                continue
            }
            rewrite.append(before)
        }
        guard !rewrite.isEmpty else { return }
        await attempt("put back what the sound server remembers of \(rewrite.map(\.name).joined(separator: ", "))") {
            try await mixer.remember(rewrite)
        }
    }

    /// Takes care of the entries of streams just set back (see careAfter), on PulseAudio.
    func startAfterCare(_ records: [MemoryRecord], setBack: [PlaybackStream]) {
        guard server?.memory == .readWrite else { return }
        for stream in setBack {
            guard let record = records.first(where: { $0.name == stream.memoryKey }), record.before != nil else { continue }
            var care = afterCare[record.name] ?? AfterCare(before: record.before, muted: stream.muted, volume: stream.volume)
            care.streams.insert(stream.id)
            afterCare[record.name] = care
        }
    }

    /// A stream is gone: its entry needs no more care once none of its kind we set back plays.
    func endAfterCare(_ id: UInt32) {
        for (name, var care) in afterCare where care.streams.contains(id) {
            care.streams.remove(id)
            afterCare[name] = care.streams.isEmpty ? nil : care
        }
    }

    /// Puts the entries back as they were before Voicebox touched them, and deletes those that
    /// did not exist. What cannot be written now (the server is away) waits for it, in the journal.
    func putBack(_ records: [MemoryRecord]) async {
        guard !records.isEmpty else { return }
        for record in records { provisional[record.name] = nil }
        guard let memory = await knownServer()?.memory else {
            return keepPending(records)
        }
        guard memory != .nothing else { return }
        let settings = records.compactMap(\.before)
        let absent = records.filter { $0.before == nil }.map(\.name)
        var written = true
        if !settings.isEmpty {
            written = await attempt("put back what the sound server remembers of \(settings.map(\.name).joined(separator: ", "))") {
                try await mixer.remember(settings)
            }
        }
        var deleted = true
        if !absent.isEmpty, memory == .readWrite {
            deleted = await attempt("delete \(absent.joined(separator: ", ")) from the sound server's memory") {
                try await mixer.forgetRemembered(absent)
            }
        }
        if !written || !deleted { keepPending(records) } else { letGo(records) }
        if !written, memory == .writeOnly { startPendingChecks() }
    }

    /// Records to put back once the server is reached (see `addPending`).
    func keepPending(_ records: [MemoryRecord]) {
        addPending(records)
        saveJournal()
    }
}

/// An entry kept as it was after the interruption, while a stream we set back plays.
struct AfterCare: Sendable {
    var before: RememberedSetting?
    /// What we gave the stream back.
    var muted: Bool
    var volume: [UInt32]
    var streams: Set<UInt32> = []
}
