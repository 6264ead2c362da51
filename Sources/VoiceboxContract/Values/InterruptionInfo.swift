/// Why an audio interruption is in progress.
public enum InterruptionReason: String, Sendable, Codable {
    /// Voicebox is speaking: others are paused, ducked or left alone (option `others`).
    case speaking
    /// Voicebox is listening to a microphone.
    case listening
    /// Something more important (a call) took the audio: Voicebox holds its own work.
    case external
}

/// AudioInterruption's `info`.
public struct InterruptionInfo: Sendable, Equatable {
    public var reason: InterruptionReason
    /// The utterance or recognition concerned; 0 for external.
    public var id: UInt64
    /// On `ended` only: whether the interrupted side should (and, for what Voicebox controls, did) resume.
    public var shouldResume: Bool?
    public var pausedPlayers: [String]
    public var mutedStreams: UInt32
    public var duckedStreams: UInt32
    public var corkedStreams: UInt32

    public init(reason: InterruptionReason, id: UInt64, shouldResume: Bool? = nil, pausedPlayers: [String] = [],
                mutedStreams: UInt32 = 0, duckedStreams: UInt32 = 0, corkedStreams: UInt32 = 0) {
        self.reason = reason
        self.id = id
        self.shouldResume = shouldResume
        self.pausedPlayers = pausedPlayers
        self.mutedStreams = mutedStreams
        self.duckedStreams = duckedStreams
        self.corkedStreams = corkedStreams
    }
}

public enum InterruptionState: String, Sendable, StringCodedArgument {
    case began, ended
}

/// AudioInterruption's `info`: reason, id, paused_players, muted/ducked/corked_streams, and
/// should_resume on `ended` only.
extension InterruptionInfo: BusArgument {
    public static var busType: DBusType { VarDict.busType }

    public var busValue: DBusValue {
        var entries: [String: DBusValue] = [
            "reason": .string(reason.rawValue),
            "id": .uint64(id),
            "paused_players": .stringArray(pausedPlayers),
            "muted_streams": .uint32(mutedStreams),
            "ducked_streams": .uint32(duckedStreams),
            "corked_streams": .uint32(corkedStreams),
        ]
        if let shouldResume { entries["should_resume"] = .boolean(shouldResume) }
        return VarDict(entries).busValue
    }

    public init(busValue: DBusValue) throws(DBusError) {
        let entries = try VarDict(busValue: busValue).entries
        func value<T: BusArgument>(_ key: String, _ type: T.Type) -> T? { entries[key].flatMap { try? T(busValue: $0) } }
        guard let name = value("reason", String.self), let reason = InterruptionReason(rawValue: name),
              let id = value("id", UInt64.self) else {
            throw .invalidArgs("AudioInterruption's info lacks its reason or id")
        }
        self.init(reason: reason, id: id, shouldResume: value("should_resume", Bool.self),
                  pausedPlayers: value("paused_players", [String].self) ?? [],
                  mutedStreams: value("muted_streams", UInt32.self) ?? 0, duckedStreams: value("ducked_streams", UInt32.self) ?? 0,
                  corkedStreams: value("corked_streams", UInt32.self) ?? 0)
    }
}
