import Synchronization

/// An object on the bus: its interfaces, the handler for their methods, and its properties.
/// org.freedesktop.DBus.Introspectable and .Properties are answered here; .Peer by libdbus.
public final class ExportedObject: Sendable {
    public let path: String
    public let interfaces: [InterfaceDescription]
    private let handler: @Sendable (MethodCall) -> Void
    private let properties = Mutex<[String: [String: DBusValue]]>([:])
    private let loop: EventLoop

    init(path: String, interfaces: [InterfaceDescription], loop: EventLoop, handler: @escaping @Sendable (MethodCall) -> Void) {
        self.path = path
        self.interfaces = interfaces
        self.loop = loop
        self.handler = handler
    }

    /// Sets a property's value; announces it with PropertiesChanged when it really changed.
    public func setProperty(_ name: String, of interfaceName: String, to value: DBusValue) {
        guard let declared = interfaces.first(where: { $0.name == interfaceName })?.property(named: name),
              declared.type == value.type.signature else {
            busLog("property \(interfaceName).\(name) set to a value of type \(value.type): ignored")
            return
        }
        let changed = properties.withLock { table in
            guard table[interfaceName]?[name] != value else { return false }
            table[interfaceName, default: [:]][name] = value
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

    public func property(_ name: String, of interfaceName: String) -> DBusValue? {
        properties.withLock { $0[interfaceName]?[name] }
    }

    // MARK: Dispatch (loop thread)

    func handle(_ message: MessageRef, state: ConnectionState) {
        let member = message.member ?? ""
        switch message.interface {
        case "org.freedesktop.DBus.Introspectable" where member == "Introspect":
            let children = Introspection.children(of: path, among: state.objects.keys)
            state.reply(to: message, [.string(Introspection.xml(interfaces: interfaces, children: children))])
            return
        case "org.freedesktop.DBus.Properties":
            handleProperties(message, member: member, state: state)
            return
        default:
            break
        }
        let candidates = message.interface.map { name in interfaces.filter { $0.name == name } } ?? interfaces
        guard !candidates.isEmpty else {
            state.replyError(to: message, .init(name: "org.freedesktop.DBus.Error.UnknownInterface",
                                                message: "no interface \(message.interface ?? "") at \(path)"))
            return
        }
        guard let interface = candidates.first(where: { $0.method(named: member) != nil }),
              let method = interface.method(named: member) else {
            state.replyError(to: message, .init(name: "org.freedesktop.DBus.Error.UnknownMethod",
                                                message: "no method \(member) at \(path)"))
            return
        }
        guard message.signature == method.inputSignature else {
            state.replyError(to: message, .invalidArgs("\(member) takes (\(method.inputSignature)), not (\(message.signature))"))
            return
        }
        do {
            let arguments = try Marshalling.read(message.pointer)
            handler(MethodCall(message: message, interface: interface.name, method: method, arguments: arguments, loop: loop))
        } catch {
            state.replyError(to: message, error)
        }
    }

    private func handleProperties(_ message: MessageRef, member: String, state: ConnectionState) {
        let arguments = (try? Marshalling.read(message.pointer)) ?? []
        let interfaceName = arguments.first?.string ?? ""
        let known = interfaces.first { $0.name == interfaceName }
        switch (member, message.signature) {
        case ("Get", "ss"):
            let name = arguments[1].string ?? ""
            guard let known, known.property(named: name) != nil, let value = property(name, of: known.name) else {
                state.replyError(to: message, .init(name: "org.freedesktop.DBus.Error.UnknownProperty",
                                                    message: "no property \(interfaceName).\(name)"))
                return
            }
            state.reply(to: message, [.variant(value)])
        case ("GetAll", "s"):
            // The empty interface name means all interfaces (the spec allows it).
            var all: [String: DBusValue] = [:]
            for interface in interfaces where interfaceName.isEmpty || interface.name == interfaceName {
                for declared in interface.properties {
                    if let value = property(declared.name, of: interface.name) { all[declared.name] = value }
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
