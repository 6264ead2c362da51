import Glibc
import VoiceboxContract
import VoiceboxThreads

/// An object on the bus: one interface, the handler of each of its methods, and its properties.
/// org.freedesktop.DBus.Introspectable and .Properties are answered here; .Peer by libdbus.
///
/// Calls run on Swift tasks, each caller's in the order it sent them, different callers'
/// independently (`CallerLanes`); property reads and introspection are answered on the loop
/// thread at once, whatever any method is doing.
public final class ExportedObject: Sendable {
    public let path: String
    public let interface: InterfaceDescription
    private let handlers: [String: MethodHandler]
    private let properties = Locked<[String: DBusValue]>([:])
    /// Properties whose value is made when it is read (`setComputedProperty`).
    private let computed = Locked<[String: @Sendable () -> DBusValue]>([:])
    private let lanes = CallerLanes()
    private let loop: EventLoop

    init(path: String, interface: InterfaceDescription, handlers: [MethodHandler], loop: EventLoop) throws(DBusError) {
        var table: [String: MethodHandler] = [:]
        for handler in handlers {
            guard interface.method(named: handler.method.name) == handler.method else {
                throw .invalidArgs("\(handler.method.name) is not declared so in \(interface.name)")
            }
            guard table.updateValue(handler, forKey: handler.method.name) == nil else {
                throw .invalidArgs("two handlers for \(handler.method.name)")
            }
        }
        if let missing = interface.methods.first(where: { table[$0.name] == nil }) {
            throw .invalidArgs("no handler for \(interface.name).\(missing.name)")
        }
        self.path = path
        self.interface = interface
        self.handlers = table
        self.loop = loop
    }

    /// Emits one of the interface's signals from this object.
    public func emit<each Argument>(_ signal: BusSignal<repeat each Argument>, _ arguments: repeat each Argument) {
        let path = path, interfaceName = interface.name, values = signal.encode(repeat each arguments)
        loop.submit { $0.emit(path: path, interface: interfaceName, member: signal.name, arguments: values) }
    }

    /// Emits the interface's signal `name` with values already encoded; values that are not of the
    /// declared signature are not sent (logged: a programming error).
    public func emit(signal name: String, _ values: [DBusValue]) {
        let interfaceName = interface.name
        let signature = values.map(\.type.signature).joined()
        guard let declared = interface.signal(named: name), declared.arguments.map(\.type).joined() == signature else {
            busLog("signal \(interfaceName).\(name) with arguments (\(signature)) is not declared: not sent")
            return
        }
        let path = path
        loop.submit { $0.emit(path: path, interface: interfaceName, member: name, arguments: values) }
    }

    /// Sets a property's value; announces it with PropertiesChanged when it really changed.
    public func set<Value>(_ property: BusProperty<Value>, _ value: Value) {
        setProperty(property.name, to: value.busValue)
    }

    /// Sets property `name` to a value already encoded; announces it with PropertiesChanged when it
    /// really changed. A value not of the declared type is ignored (logged: a programming error).
    public func setProperty(_ name: String, to value: DBusValue) {
        let interfaceName = interface.name
        guard let declared = interface.property(named: name), declared.type == value.type.signature else {
            busLog("property \(interfaceName).\(name) set to a value of type \(value.type): ignored")
            return
        }
        let changed = properties.withLock { table in
            guard table[name] != value else { return false }
            table[name] = value
            return true
        }
        guard changed else { return }
        let path = path
        let arguments: [DBusValue] = declared.emitsChanged
            ? [.string(interfaceName), .vardict([name: value]), .stringArray([])]
            : [.string(interfaceName), .vardict([:]), .stringArray([name])]
        loop.submit { state in
            state.emit(path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", arguments: arguments)
        }
    }

    /// Property `name` is made by `value` each time it is read, and announced now with
    /// PropertiesChanged carrying what `value` makes: for a large value (a list of 13,000 voices)
    /// that its owner holds in another form anyway, which would otherwise be held twice. Reads are
    /// answered on the bus thread, so `value` must be quick and wait for nothing.
    public func setComputedProperty(_ name: String, _ value: @escaping @Sendable () -> DBusValue) {
        let interfaceName = interface.name
        guard let declared = interface.property(named: name) else {
            busLog("property \(interfaceName).\(name) is not declared: ignored")
            return
        }
        computed.withLock { $0[name] = value }
        properties.withLock { _ = $0.removeValue(forKey: name) }
        let path = path
        let announced = value()
        guard declared.type == announced.type.signature else {
            busLog("property \(interfaceName).\(name) made a value of type \(announced.type): not announced")
            return
        }
        let arguments: [DBusValue] = declared.emitsChanged
            ? [.string(interfaceName), .vardict([name: announced]), .stringArray([])]
            : [.string(interfaceName), .vardict([:]), .stringArray([name])]
        loop.submit { state in
            state.emit(path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", arguments: arguments)
        }
    }

    func property(_ name: String) -> DBusValue? {
        if let make = computed.withLock({ $0[name] }) { return make() }
        return properties.withLock { $0[name] }
    }

    // MARK: Dispatch (loop thread)

    func handle(_ message: MessageRef, state: ConnectionState) {
        let member = message.member ?? ""
        switch message.interface {
        case "org.freedesktop.DBus.Introspectable" where member == "Introspect":
            guard message.signature.isEmpty else {
                state.replyError(to: message, .invalidArgs("Introspect takes no arguments, not (\(message.signature))"))
                return
            }
            let children = Introspection.children(of: path, among: state.objects.keys)
            state.reply(to: message, [.string(Introspection.xml(interfaces: [interface], children: children))])
            return
        case "org.freedesktop.DBus.Properties":
            handleProperties(message, member: member, state: state)
            return
        default:
            break
        }
        guard message.interface == nil || message.interface == interface.name else {
            state.replyError(to: message, .init(name: "org.freedesktop.DBus.Error.UnknownInterface",
                                                message: "no interface \(message.interface ?? "") at \(path)"))
            return
        }
        guard let handler = handlers[member] else {
            state.replyError(to: message, .init(name: "org.freedesktop.DBus.Error.UnknownMethod",
                                                message: "no method \(member) at \(path)"))
            return
        }
        // Refused before anything is read, so no descriptor of a wrong call is ever taken out.
        guard message.signature == handler.method.inputSignature else {
            state.replyError(to: message, .invalidArgs("\(member) takes (\(handler.method.inputSignature)), not (\(message.signature))"))
            return
        }
        var descriptors: [Int32] = []
        do {
            let arguments = try Marshalling.read(message.pointer, descriptors: &descriptors)
            let call = MethodCall(message: message, method: handler.method, arguments: arguments, descriptors: descriptors,
                                  loop: loop)
            lanes.run(for: call.sender) { await handler.run(call) }
        } catch {
            for descriptor in descriptors { close(descriptor) }
            state.replyError(to: message, error)
        }
    }

    private func handleProperties(_ message: MessageRef, member: String, state: ConnectionState) {
        // Every Properties method takes strings and a variant at most; anything else is refused
        // below before the body is read.
        let arguments = ["ss", "s", "ssv"].contains(message.signature) ? (try? Marshalling.read(message.pointer)) ?? [] : []
        let interfaceName = arguments.first?.string ?? ""
        let known: InterfaceDescription? = interfaceName == interface.name ? interface : nil
        switch (member, message.signature) {
        case ("Get", "ss"):
            let name = arguments[1].string ?? ""
            guard let known, known.property(named: name) != nil, let value = property(name) else {
                state.replyError(to: message, .init(name: "org.freedesktop.DBus.Error.UnknownProperty",
                                                    message: "no property \(interfaceName).\(name)"))
                return
            }
            state.reply(to: message, [.variant(value)])
        case ("GetAll", "s"):
            // The empty interface name means all interfaces (the spec allows it).
            var all: [String: DBusValue] = [:]
            if interfaceName.isEmpty || known != nil {
                for declared in interface.properties {
                    if let value = property(declared.name) { all[declared.name] = value }
                }
            }
            guard interfaceName.isEmpty || known != nil else {
                state.replyError(to: message, .init(name: "org.freedesktop.DBus.Error.UnknownInterface",
                                                    message: "no interface \(interfaceName) at \(path)"))
                return
            }
            state.reply(to: message, [.vardict(all)])
        case ("Set", "ssv"):
            let name = arguments[1].string ?? ""
            let exists = known?.property(named: name) != nil
            state.replyError(to: message, .init(name: exists ? "org.freedesktop.DBus.Error.PropertyReadOnly"
                                                            : "org.freedesktop.DBus.Error.UnknownProperty",
                                                message: exists ? "\(name) is read-only" : "no property \(interfaceName).\(name)"))
        case ("Get", _), ("GetAll", _), ("Set", _):
            state.replyError(to: message, .invalidArgs("wrong arguments (\(message.signature)) for Properties.\(member)"))
        default:
            state.replyError(to: message, .init(name: "org.freedesktop.DBus.Error.UnknownMethod",
                                                message: "no method Properties.\(member)"))
        }
    }
}
