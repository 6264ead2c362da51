import VoiceboxBus
import VoiceboxCore
import VoiceboxInterface

/// The D-Bus face of the service: /org/voicebox/Speech1 exported with a handler for each
/// declared method (`SpeechHandlers`), and the services' signals and properties as bus traffic.
///
/// Each caller's calls run in the order it sent them and different callers' independently (the
/// bus's `CallerLanes`); property reads are answered on the bus thread at once.
public final class SpeechObject: Sendable {
    private let object: ExportedObject
    private let connection: BusConnection
    private let services = ServicesGate()

    /// Exports the object. Calls that come before `serve` wait for it. `notifyMicrophone`: show a
    /// desktop notification while a recognition has the microphone.
    public init(connection: BusConnection, notifyMicrophone: Bool = false) throws(DBusError) {
        self.connection = connection
        let callers = CallerSandbox(connection: connection)
        let microphone = MicrophoneNotice(connection: connection, callers: callers, notify: notifyMicrophone)
        object = try connection.export(path: Speech1.objectPath, interface: Speech1.interface,
                                       handlers: SpeechHandlers.all(services, callers: callers, microphone: microphone))
    }

    /// Lets calls through to the services.
    public func serve(_ speech: SpeechService, recognition: RecognitionService) {
        services.open(Services(speech: speech, recognition: recognition))
    }
}

extension SpeechObject: ServiceBus {
    public func emit(_ signal: ServiceSignal) {
        switch signal {
        case .speechStarted(let id): object.emit(Speech1.speechStarted, id)
        case .speechMark(let id, let name): object.emit(Speech1.speechMark, id, name)
        case .speechFinished(let id, let end): object.emit(Speech1.speechFinished, id, end.rawValue)
        case .voicesChanged: object.emit(Speech1.voicesChanged)
        case .recognitionStarted(let id): object.emit(Speech1.recognitionStarted, id)
        case .recognitionPartial(let id, let text): object.emit(Speech1.recognitionPartial, id, text)
        case .audioLevel(let id, let level): object.emit(Speech1.audioLevel, id, level)
        case .recognitionProgress(let id, let fraction): object.emit(Speech1.recognitionProgress, id, fraction)
        case .recognitionFinished(let id, let text): object.emit(Speech1.recognitionFinished, id, text)
        case .audioInterruption(let state, let info): object.emit(Speech1.audioInterruption, state.rawValue, Self.vardict(info))
        }
    }

    public func publish(_ property: ServiceProperty) {
        switch property {
        case .version(let version): object.set(Speech1.version, version)
        case .speaking(let speaking): object.set(Speech1.speaking, speaking)
        case .paused(let paused): object.set(Speech1.paused, paused)
        case .voiceCount(let count): object.set(Speech1.voiceCount, count)
        case .listening(let listening): object.set(Speech1.listening, listening)
        case .listeningID(let id): object.set(Speech1.listeningID, id)
        case .dictationID(let id): object.set(Speech1.dictationID, id)
        case .recognitionLanguages(let tags): object.set(Speech1.recognitionLanguages, tags)
        case .interrupted(let interrupted): object.set(Speech1.interrupted, interrupted)
        }
    }

    /// AudioInterruption's `info`.
    static func vardict(_ info: InterruptionInfo) -> VarDict {
        var entries: [String: DBusValue] = [
            "reason": .string(info.reason.rawValue),
            "id": .uint64(info.id),
            "paused_players": .stringArray(info.pausedPlayers),
            "muted_streams": .uint32(info.mutedStreams),
            "ducked_streams": .uint32(info.duckedStreams),
            "corked_streams": .uint32(info.corkedStreams),
        ]
        if let shouldResume = info.shouldResume { entries["should_resume"] = .boolean(shouldResume) }
        return VarDict(entries)
    }

    public func watchCaller(_ caller: String, onVanish: @escaping @Sendable (String) -> Void) -> UInt64 {
        connection.watchPeer(caller, onVanish: onVanish)
    }

    public func unwatchCaller(_ token: UInt64) {
        connection.unwatchPeer(token)
    }
}

extension VoiceboxError: BusErrorConvertible {
    public var busError: DBusError { DBusError(name: dbusName, message: message) }
}
