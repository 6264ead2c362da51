/// The way text will be inserted in this session, chosen before anything is done, with the
/// reason in words (`--verbose`, `voicebox status`). Where IBus may type (GNOME and KDE on
/// Wayland, or `--typer ibus`), its daemon is asked first, and the connection kept for the typing.
public struct InsertionRoute: Sendable {
    public let plan: InsertionPlan
    public let session: DesktopSession
    /// The session's IBus daemon, when it was asked and answered (closed by `insert`).
    let ibus: IBusDaemon?

    public static func choose(_ mode: InsertionMode, text: String = "", typer: Typer?,
                              environment: [String: String]) async throws(InsertionError) -> InsertionRoute {
        var session = DesktopSession.detect(environment)
        guard session != .none else { throw .noSession }
        // What the compositor offers decides, where it answers: a session that names no desktop
        // we know (a bare gnome-shell or kwin started by a script, X-Cinnamon) is no wlroots one.
        if session != .x11, let globals = WaylandGlobals.list(environment) {
            session = globals.contains(WaylandGlobals.virtualKeyboard) ? .wlroots : .gnomeOrKDE
        }
        let asksIBus = mode == .type && (typer == .ibus || (typer == nil && session == .gnomeOrKDE))
        let ibus = asksIBus ? await IBusDaemon.connect(environment) : nil
        do {
            let plan = try InsertionPlan.choose(mode, text: text, session: session, typer: typer,
                                                ydotoolSocket: Ydotool.socketExists(environment), ibus: ibus != nil)
            return InsertionRoute(plan: plan, session: session, ibus: ibus)
        } catch {
            await ibus?.close()
            throw error
        }
    }

    /// Closes the connection to IBus, if one was made (a route chosen only to be named).
    public func close() async { await ibus?.close() }

    /// The way, and why, in a sentence: "typed through IBus (…)".
    public var description: String {
        let place = session == .x11 ? "X11" : session == .wlroots ? "a wlroots compositor (sway, Hyprland)" : "GNOME or KDE on Wayland"
        switch plan {
        case .type(.ibus):
            guard let ibus else { return "typed through IBus (--typer ibus), but no IBus daemon answers in this session" }
            return "typed through IBus at \(ibus.address): committed as IBus's panel extension, as its emoji picker types, "
                + "your input method left as it is (where IBus does not let the extension be taken, an engine of Voicebox's types)"
                + (session == .gnomeOrKDE ? " (\(place) offers programs no virtual keyboard)" : "")
        case .type(.xdotool): return "typed with xdotool (\(place))"
        case .type(.wtype): return "typed with wtype, through the compositor's virtual keyboard (\(place))"
        case .type(.ydotool):
            return "typed with ydotool, through the kernel's uinput (\(place)"
                + (session == .gnomeOrKDE ? "; no IBus daemon answers)" : ")")
        case .paste(let clipboard, let keys):
            return "pasted: put on the clipboard with \(clipboard == .xclip ? "xclip" : "wl-copy"), the paste keys pressed with \(keys.rawValue) (\(place))"
        case .clipboard(let clipboard):
            return "put on the clipboard with \(clipboard == .xclip ? "xclip" : "wl-copy") (\(place))"
        case .clipboardForHand:
            return "put on the clipboard for you to paste: \(place) offers programs no virtual keyboard, no IBus daemon answers, "
                + "and ydotoold is not running"
        }
    }

    /// The way's short name: ibus, xdotool, wtype, ydotool, paste, clipboard.
    public var name: String {
        switch plan {
        case .type(let typer): typer.rawValue
        case .paste: "paste"
        case .clipboard, .clipboardForHand: "clipboard"
        }
    }
}
