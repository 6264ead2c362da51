/// One signal the services announce, declared once: its name on the bus, a line of documentation
/// and its typed arguments. Core emits it (`ServiceBus.emit`); the bus face derives its D-Bus
/// declaration from it (VoiceboxInterface's `Speech1`), so the two cannot disagree.
public struct ServiceSignal<each Argument: Sendable>: Sendable {
    public let name: String
    public let summary: String
    public let argumentNames: [String]

    public init(_ name: String, _ summary: String, _ arguments: repeat (String, (each Argument).Type)) {
        var names: [String] = []
        for argument in repeat each arguments { names.append(argument.0) }
        self.name = name
        self.summary = summary
        argumentNames = names
    }
}

/// One read-only property the services keep, declared once like `ServiceSignal`.
public struct ServiceProperty<Value: Sendable>: Sendable {
    public let name: String
    public let summary: String

    public init(_ name: String, _ summary: String, _ type: Value.Type) {
        self.name = name
        self.summary = summary
    }
}
