import VoiceboxBus
import VoiceboxContract
import VoiceboxCore

/// The D-Bus face of the service: /org/voicebox/Speech1 exported with a handler for each
/// method of the contract (`SpeechHandlers`), and the services' signals and properties as bus traffic.
///
/// Each caller's calls run in the order it sent them and different callers' independently (the
/// bus's `CallerLanes`); property reads are answered on the bus thread at once.
public final class SpeechObject: Sendable {
    private let object: ExportedObject
    private let connection: BusConnection
    private let services = ServicesGate()

    /// Exports the object. Calls that come before `serve` wait for it. `notifyMicrophone`: show a
    /// desktop notification while a recognition has the microphone. `bounds`: the bus calls it makes
    /// (bus-call).
    public init(connection: BusConnection, notifyMicrophone: Bool = false, bounds: Bounds = Bounds()) throws(DBusError) {
        self.connection = connection
        let answer = bounds[.busCall]
        let callers = CallerSandbox(connection: connection, answer: answer)
        let microphone = MicrophoneNotice(connection: connection, callers: callers, notify: notifyMicrophone, answer: answer)
        let handlers = SpeechHandlers(gate: services, callers: callers, microphone: microphone)
        object = try connection.export(path: Speech1.objectPath, interface: Speech1.interface,
                                       handlers: Speech1.implementations(of: handlers).map(MethodHandler.init))
    }

    /// Lets calls through to the services.
    public func serve(_ speech: SpeechService, recognition: RecognitionService) {
        services.open(Services(speech: speech, recognition: recognition))
    }
}

extension SpeechObject: ServiceBus {
    /// The object checks each signal's signature against the interface before anything is sent.
    public func emit<each Argument>(_ signal: BusSignal<repeat each Argument>, _ arguments: repeat each Argument) {
        object.emit(signal: signal.name, signal.encode(repeat each arguments))
    }

    public func publish<Value>(_ property: BusProperty<Value>, _ value: Value) {
        object.setProperty(property.name, to: value.busValue)
    }

    public func watchCaller(_ caller: String, onVanish: @escaping @Sendable (String) -> Void) -> UInt64 {
        connection.watchPeer(caller, onVanish: onVanish)
    }

    public func unwatchCaller(_ token: UInt64) {
        connection.unwatchPeer(token)
    }
}
