import VoiceboxBus
import VoiceboxContract

/// The IBus interfaces Voicebox speaks, as ibus 1.5.27 declares them (src/ibusengine.c,
/// src/ibusfactory.c, bus/ibusimpl.c): the daemon's own object, the factory it asks for an engine,
/// and the engine it then drives. Every engine method the daemon may call is declared, so that
/// none is refused: ProcessKeyEvent needs its answer, the others are answered and ignored.
enum IBusInterfaces {
    static let busName = "org.freedesktop.IBus"
    static let path = "/org/freedesktop/IBus"
    static let interfaceName = "org.freedesktop.IBus"
    static let factoryPath = "/org/freedesktop/IBus/Factory"
    static let factoryInterfaceName = "org.freedesktop.IBus.Factory"
    static let engineInterfaceName = "org.freedesktop.IBus.Engine"

    // MARK: The daemon (org.freedesktop.IBus)

    static let registerComponent = BusMethod("RegisterComponent", "Adds a component and its engines for as long as the caller's connection lasts.",
                                             in: ("component", Variant.self))
    static let setGlobalEngine = BusMethod("SetGlobalEngine", "Switches the focused input context (and the global engine) to an engine.",
                                           in: ("engine_name", String.self))

    // MARK: The factory

    static let createEngine = BusMethod("CreateEngine", "Makes an engine and returns its object.",
                                        in: ("name", String.self), out: ("engine", ObjectPath.self))
    static let factory = InterfaceDescription(name: factoryInterfaceName, methods: [createEngine.description])

    // MARK: The engine

    static let processKeyEvent = BusMethod("ProcessKeyEvent", "A key: false lets it through to the application.",
                                           in: ("keyval", UInt32.self), ("keycode", UInt32.self), ("state", UInt32.self),
                                           out: ("handled", Bool.self))
    static let focusIn = BusMethod("FocusIn", "An input context with this engine has the focus.")
    static let focusInId = BusMethod("FocusInId", "The same, naming the context and its client.",
                                     in: ("object_path", String.self), ("client", String.self))
    static let focusOut = BusMethod("FocusOut", "The input context lost the focus.")
    static let focusOutId = BusMethod("FocusOutId", "The same, naming the context.", in: ("object_path", String.self))
    static let setCapabilities = BusMethod("SetCapabilities", "What the client can do (IBusCapabilite bits).", in: ("caps", UInt32.self))
    static let setSurroundingText = BusMethod("SetSurroundingText", "The text around the client's cursor.",
                                              in: ("text", Variant.self), ("cursor_pos", UInt32.self), ("anchor_pos", UInt32.self))
    static let setCursorLocation = BusMethod("SetCursorLocation", "Where the cursor is on screen.",
                                             in: ("x", Int32.self), ("y", Int32.self), ("w", Int32.self), ("h", Int32.self))
    static let processHandWritingEvent = BusMethod("ProcessHandWritingEvent", "Unused.", in: ("coordinates", [Double].self))
    static let cancelHandWriting = BusMethod("CancelHandWriting", "Unused.", in: ("n_strokes", UInt32.self))
    static let propertyActivate = BusMethod("PropertyActivate", "Unused.", in: ("name", String.self), ("state", UInt32.self))
    static let propertyShow = BusMethod("PropertyShow", "Unused.", in: ("name", String.self))
    static let propertyHide = BusMethod("PropertyHide", "Unused.", in: ("name", String.self))
    static let candidateClicked = BusMethod("CandidateClicked", "Unused.", in: ("index", UInt32.self), ("button", UInt32.self),
                                            ("state", UInt32.self))
    static let panelExtensionReceived = BusMethod("PanelExtensionReceived", "Unused.", in: ("event", Variant.self))
    static let panelExtensionRegisterKeys = BusMethod("PanelExtensionRegisterKeys", "Unused.", in: ("data", Variant.self))
    /// Nullary methods that change nothing here.
    static let ignoredNullary = ["Reset", "Enable", "Disable", "PageUp", "PageDown", "CursorUp", "CursorDown"].map {
        BusMethod($0, "Unused.")
    }

    static let commitText = BusSignal("CommitText", "Text for the focused field.", ("text", Variant.self))
    static let requireSurroundingText = BusSignal("RequireSurroundingText", "Asks the client to report the text around its cursor.")
    /// True makes the daemon call FocusInId (with the client's name) instead of FocusIn. A plain
    /// `b`, as libibus's engines answer it and ibus-daemon reads it (bus/engineproxy.c takes the
    /// variant's boolean), though libibus's introspection XML says `(b)`.
    static let focusId = InterfaceDescription.Property("FocusId", "b", summary: "Whether FocusInId is understood.")
    /// Written by the daemon (Set is refused as read-only, which it ignores).
    static let contentType = InterfaceDescription.Property("ContentType", "(uu)", summary: "The field's purpose and hints.")

    static var engine: InterfaceDescription {
        let methods = [processKeyEvent.description, focusIn.description, focusInId.description, focusOut.description,
                       focusOutId.description, setCapabilities.description, setSurroundingText.description,
                       setCursorLocation.description, processHandWritingEvent.description, cancelHandWriting.description,
                       propertyActivate.description, propertyShow.description, propertyHide.description,
                       candidateClicked.description, panelExtensionReceived.description,
                       panelExtensionRegisterKeys.description]
            // (A closure: the key path \.description into a parameter-pack generic crashes Swift 6.3.1.)
            + ignoredNullary.map { $0.description }
        return InterfaceDescription(name: engineInterfaceName, methods: methods,
                                    signals: [commitText.description, requireSurroundingText.description],
                                    properties: [focusId, contentType])
    }
}
