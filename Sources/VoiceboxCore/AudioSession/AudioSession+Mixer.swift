import VoiceboxContract

/// Requests to the mixer, with failures logged, naming the stream they concern.
extension AudioSession {
    /// Runs one mixer request; a failure is logged, naming `what` and the stream it concerns.
    @discardableResult
    func attempt(_ what: String, _ stream: PlaybackStream? = nil, _ request: () async throws -> Void) async -> Bool {
        do {
            try await request()
            return true
        } catch {
            log("cannot \(what)\(stream.map { " " + Self.describe($0) } ?? ""): \(error)")
            return false
        }
    }

    /// The current streams, or nil (logged) when the server cannot be asked.
    func listStreams() async -> [PlaybackStream]? {
        do {
            let list = try await mixer.playbackStreams()
            for stream in list { note(stream) }
            return list
        } catch {
            log("cannot list the playback streams: \(error)")
            return nil
        }
    }

    /// What the server is; nil (logged) when it cannot be asked.
    func serverInfo() async -> SoundServerInfo? {
        do {
            let info = try await mixer.serverInfo()
            server = info
            return info
        } catch {
            log("cannot ask the sound server what it is: \(error)")
            return nil
        }
    }

    /// Takes a stream's latest state into the table.
    func note(_ stream: PlaybackStream) {
        if streams[stream.id] == nil { firstSeen[stream.id] = clock.now }
        streams[stream.id] = stream
    }

    static func describe(_ stream: PlaybackStream) -> String {
        "stream \(stream.id) (\(stream.applicationName ?? "no application name"), pid \(stream.processID.map(String.init) ?? "?"))"
    }

    static func describe(_ entry: InterruptionJournal.Stream) -> String {
        "stream \(entry.id) (\(entry.applicationName ?? "no application name"), pid \(entry.processID.map(String.init) ?? "?"))"
    }
}
