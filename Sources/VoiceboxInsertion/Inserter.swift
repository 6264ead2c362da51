import Foundation

/// Inserts text into the focused window: typed, pasted (the clipboard restored afterwards) or
/// only put on the clipboard, with the programs this session has.
public enum Inserter {
    /// How long the target window gets to take the pasted text before the clipboard is restored.
    public static let pasteWait: Duration = .milliseconds(400)

    /// Returns a note for the user when the text could only be put on the clipboard.
    @discardableResult
    public static func insert(_ text: String, mode: InsertionMode, typer: Typer? = nil,
                              environment: [String: String] = ProcessInfo.processInfo.environment) throws(InsertionError) -> String? {
        let session = Session.detect(environment)
        let plan = try InsertionPlan.choose(mode, text: text, session: session, typer: typer,
                                            ydotoolSocket: Ydotool.socketExists(environment))
        switch plan {
        case .type(let typer):
            try type(text, with: typer)
        case .paste(let clipboard, let keys):
            try paste(text, clipboard: clipboard, keys: keys)
        case .clipboard(let clipboard):
            try Clipboard.setText(clipboard, text)
        case .clipboardForHand(let clipboard):
            try Clipboard.setText(clipboard, text)
            return "the text is on the clipboard: paste it with Ctrl+V (GNOME and KDE on Wayland let programs type only through ydotool, whose daemon ydotoold is not running)"
        }
        return nil
    }

    static func type(_ text: String, with typer: Typer) throws(InsertionError) {
        switch typer {
        case .xdotool: try Xdotool.type(text)
        case .wtype: try Wtype.type(text)
        case .ydotool: try Ydotool.type(text)
        }
    }

    static func pasteKeystroke(_ typer: Typer) throws(InsertionError) {
        switch typer {
        case .xdotool: try Xdotool.pasteKeystroke()
        case .wtype: try Wtype.pasteKeystroke()
        case .ydotool: try Ydotool.pasteKeystroke()
        }
    }

    /// Saves the clipboard, pastes `text` through it, and puts back what it held.
    static func paste(_ text: String, clipboard: ClipboardKind, keys: Typer) throws(InsertionError) {
        // Every program needed is checked first: nothing is changed when one is missing.
        let keyProgram = keys.rawValue
        _ = try Programs.find(keyProgram, for: keys == .xdotool ? "pasting on X11" : keys == .wtype ? "pasting on Wayland" : Ydotool.purpose)
        for program in clipboard == .xclip ? ["xclip"] : ["wl-copy", "wl-paste"] {
            _ = try Programs.find(program, for: Clipboard.purpose(clipboard))
        }
        let saved = try Clipboard.save(clipboard)
        try Clipboard.setText(clipboard, text)
        var failure: InsertionError?
        do {
            try pasteKeystroke(keys)
            // The window asks for the clipboard once it handles Ctrl+V: give it a moment.
            let wait = pasteWait.components
            usleep(UInt32(wait.seconds * 1_000_000 + wait.attoseconds / 1_000_000_000_000))
        } catch {
            failure = error
        }
        try Clipboard.restore(clipboard, saved)
        if let failure { throw failure }
    }
}
