import VoiceboxBus
import VoiceboxContract
import VoiceboxThreads

/// What the daemon has told this process's engine, in the order it came.
struct EngineReport: Sendable {
    struct Surrounding: Equatable, Sendable {
        var text: String
        var cursor: UInt32
        var anchor: UInt32
    }

    /// The engine object the daemon asked for last.
    var enginePath: String?
    /// Whether an input context with this engine has the focus now.
    var focused = false
    /// How many times it got the focus, and the client named by the last FocusInId (nil after a
    /// plain FocusIn: the daemon asks once per engine name whether FocusInId is understood).
    var focusCount = 0
    var client: String?
    var capabilities: IBusCapabilities?
    /// Each SetSurroundingText, in order.
    var surroundings: [Surrounding] = []
}

/// The process's own IBus engine: a connection to the daemon's bus that exports the factory the
/// daemon asks for an engine, and the engine it then drives. Only the connection that registered
/// a component is asked for its engines, so this connection registers ours, and the daemon drops
/// the component when it closes.
final class IBusEngineHost: Sendable {
    let connection: BusConnection
    private let report = Locked(EngineReport())
    private let engines = Locked<[String: ExportedObject]>([:])

    init(address: String) throws(DBusError) {
        connection = try BusConnection(address: address)
        let engines = engines, report = report, connection = connection
        _ = try connection.export(path: IBusInterfaces.factoryPath, interface: IBusInterfaces.factory, handlers: [
            IBusInterfaces.createEngine.handler { _, name in
                guard name == IBusValues.engineName else { throw DBusError.invalidArgs("no engine \(name) here") }
                let path = "/org/freedesktop/IBus/Engine/Voicebox\(engines.withLock { $0.count } + 1)"
                let object = try connection.export(path: path, interface: IBusInterfaces.engine, handlers: Self.engineHandlers(report))
                // Answered at once from the bus thread, before the daemon's first look at the engine.
                object.setProperty(IBusInterfaces.focusId.name, to: .boolean(true))
                object.setProperty(IBusInterfaces.contentType.name, to: .structure([.uint32(0), .uint32(0)]))
                engines.withLock { $0[path] = object }
                report.withLock { $0.enginePath = path }
                return ObjectPath(path)
            },
        ])
    }

    /// Adds our component (and engine) to the daemon, for as long as this connection lasts.
    func register(timeout: Duration) async throws(DBusError) {
        try await IBusInterfaces.proxy(connection).call(IBusInterfaces.registerComponent, Variant(IBusValues.component()), timeout: timeout)
    }

    var snapshot: EngineReport { report.withLock { $0 } }

    /// Sends text to the focused field through the engine the daemon drives; false when it has none.
    func commit(_ text: String) -> Bool {
        guard let engine = currentEngine else { return false }
        engine.emit(IBusInterfaces.commitText, Variant(IBusValues.text(text)))
        return true
    }

    /// Asks the client (through the daemon) to report its surrounding text to the engine.
    func requireSurroundingText() {
        currentEngine?.emit(IBusInterfaces.requireSurroundingText)
    }

    private var currentEngine: ExportedObject? {
        guard let path = report.withLock({ $0.enginePath }) else { return nil }
        return engines.withLock { $0[path] }
    }

    func close() async { await connection.close() }

    /// The engine's methods: they note what the daemon says and change nothing else.
    private static func engineHandlers(_ report: Locked<EngineReport>) -> [MethodHandler] {
        let focusIn = { @Sendable (client: String?) in
            report.withLock { $0.focused = true; $0.focusCount += 1; $0.client = client }
        }
        let focusOut = { @Sendable in report.withLock { $0.focused = false } }
        var handlers: [MethodHandler] = [
            // Keys the user types meanwhile are let through, untouched.
            IBusInterfaces.processKeyEvent.handler { _, _, _, _ in false },
            IBusInterfaces.focusIn.handler { _ in focusIn(nil); return NoReply() },
            IBusInterfaces.focusInId.handler { _, _, client in focusIn(client); return NoReply() },
            IBusInterfaces.focusOut.handler { _ in focusOut(); return NoReply() },
            IBusInterfaces.focusOutId.handler { _, _ in focusOut(); return NoReply() },
            IBusInterfaces.setCapabilities.handler { _, caps in
                report.withLock { $0.capabilities = IBusCapabilities(rawValue: caps) }
                return NoReply()
            },
            IBusInterfaces.setSurroundingText.handler { _, text, cursor, anchor in
                if let string = IBusValues.string(ofText: text.value) {
                    report.withLock { $0.surroundings.append(.init(text: string, cursor: cursor, anchor: anchor)) }
                }
                return NoReply()
            },
            IBusInterfaces.setCursorLocation.handler { _, _, _, _, _ in NoReply() },
            IBusInterfaces.processHandWritingEvent.handler { _, _ in NoReply() },
            IBusInterfaces.cancelHandWriting.handler { _, _ in NoReply() },
            IBusInterfaces.propertyActivate.handler { _, _, _ in NoReply() },
            IBusInterfaces.propertyShow.handler { _, _ in NoReply() },
            IBusInterfaces.propertyHide.handler { _, _ in NoReply() },
            IBusInterfaces.candidateClicked.handler { _, _, _, _ in NoReply() },
            IBusInterfaces.panelExtensionReceived.handler { _, _ in NoReply() },
            IBusInterfaces.panelExtensionRegisterKeys.handler { _, _ in NoReply() },
        ]
        handlers += IBusInterfaces.ignoredNullary.map { $0.handler { _ in NoReply() } }
        return handlers
    }
}

extension IBusInterfaces {
    /// The daemon's own object on `connection`.
    static func proxy(_ connection: BusConnection) -> BusProxy {
        BusProxy(connection: connection, destination: busName, path: path, interface: interfaceName)
    }
}
