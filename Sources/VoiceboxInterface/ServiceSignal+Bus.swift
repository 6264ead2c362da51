import VoiceboxBus
import VoiceboxCore

// The service's signals and properties are declared once, in VoiceboxCore (`ServiceSignals`,
// `ServiceProperties`); their D-Bus declarations are derived here, and the few Core types they
// carry say how they travel. A signal whose argument is not a BusArgument does not compile here.

extension BusSignal {
    /// The D-Bus declaration of one of the service's signals.
    public init(_ signal: ServiceSignal<repeat each Argument>) {
        self.init(signal.name, signal.summary, argumentNames: signal.argumentNames)
    }
}

extension BusProperty {
    /// The D-Bus declaration of one of the service's properties.
    public init(_ property: ServiceProperty<Value>) {
        self.init(property.name, property.summary, Value.self)
    }
}

/// An enum that travels as its raw string.
public protocol StringCodedArgument: BusArgument, RawRepresentable<String> {}

extension StringCodedArgument {
    public static var busType: DBusType { .string }
    public var busValue: DBusValue { .string(rawValue) }
    public init(busValue: DBusValue) throws(DBusError) {
        guard case .string(let text) = busValue, let value = Self(rawValue: text) else {
            throw .invalidArgs("expected one of \(Self.self)'s names, got \(busValue)")
        }
        self = value
    }
}

extension SynthesisEnd: BusArgument, StringCodedArgument {}
extension InterruptionState: BusArgument, StringCodedArgument {}

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
