import VoiceboxContract

/// A signal (or another connection's method call) as a subscriber sees it.
public struct Signal: Sendable {
    public var sender: String
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]

    init(sender: String, path: String, interface: String, member: String, arguments: [DBusValue]) {
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }

    init(_ message: MessageRef) {
        sender = message.sender ?? ""
        path = message.path ?? ""
        interface = message.interface ?? ""
        member = message.member ?? ""
        arguments = (try? Marshalling.read(message.pointer)) ?? []
    }
}

extension BusSignal {
    /// The typed arguments of a received signal; nil if it is another signal or has another shape.
    public func decode(_ signal: Signal) -> (repeat each Argument)? {
        guard signal.member == name else { return nil }
        return decode(signal.arguments)
    }
}

/// Which signals a subscriber wants; nil matches anything.
public struct SignalFilter: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable {
        case signal
        /// Other connections' method calls, as a bus that hands them to every match rule shows
        /// them (IBus's bus does; a D-Bus daemon only to monitors). Seen, never answered.
        case methodCall = "method_call"
    }

    public var kind: Kind
    public var sender: String?
    public var path: String?
    public var interface: String?
    public var member: String?

    public init(_ kind: Kind = .signal, sender: String? = nil, path: String? = nil, interface: String? = nil, member: String? = nil) {
        self.kind = kind
        self.sender = sender
        self.path = path
        self.interface = interface
        self.member = member
    }

    /// The bus daemon's match rule, so that the bus routes these messages to us.
    var matchRule: String {
        var parts = ["type='\(kind.rawValue)'"]
        if let sender { parts.append("sender='\(sender)'") }
        if let path { parts.append("path='\(path)'") }
        if let interface { parts.append("interface='\(interface)'") }
        if let member { parts.append("member='\(member)'") }
        return parts.joined(separator: ",")
    }
}

struct SignalSubscription {
    let filter: SignalFilter
    let handler: @Sendable (Signal) -> Void

    /// The sender is matched by the bus (well-known names resolve there), not here.
    func matches(_ signal: Signal, kind: SignalFilter.Kind) -> Bool {
        filter.kind == kind && (filter.path == nil || filter.path == signal.path)
            && (filter.interface == nil || filter.interface == signal.interface)
            && (filter.member == nil || filter.member == signal.member)
    }
}
