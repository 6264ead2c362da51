/// The clipboard programs: xclip on X11, wl-clipboard on Wayland.
public enum ClipboardKind: Equatable, Sendable {
    case xclip, wlClipboard
}

/// CLIPBOARD (Ctrl+V) or PRIMARY (the last selected text: xterm's Shift+Insert, a middle click).
enum Selection: String, Sendable {
    case clipboard, primary
}

/// What the clipboard held, in one type (text first), so that it can be put back.
struct SavedClipboard: Equatable {
    var type: String
    var data: [UInt8]
}

enum Clipboard {
    /// Types preferred when saving: text first, then an image, then whatever else is offered.
    static let preferred = ["UTF8_STRING", "text/plain;charset=utf-8", "text/plain", "STRING", "TEXT", "image/png"]
    /// X11's targets that describe the selection rather than hold it.
    static let meta: Set<String> = ["TARGETS", "MULTIPLE", "TIMESTAMP", "SAVE_TARGETS", "DELETE", "INSERT_SELECTION", "INSERT_PROPERTY"]

    static func purpose(_ kind: ClipboardKind) -> String {
        kind == .xclip ? "pasting on X11" : "pasting on Wayland"
    }

    static func choose(from types: [String]) -> String? {
        preferred.first(where: types.contains) ?? types.first { !meta.contains($0) && !$0.isEmpty }
    }

    /// The selection's contents, nil when it holds nothing.
    static func save(_ kind: ClipboardKind, _ selection: Selection = .clipboard) throws(InsertionError) -> SavedClipboard? {
        let program = kind == .xclip ? "xclip" : "wl-paste"
        let path = try Programs.find(program, for: purpose(kind))
        let primary = selection == .primary ? ["--primary"] : []
        let listing = kind == .xclip ? ["-selection", selection.rawValue, "-o", "-t", "TARGETS"] : primary + ["--list-types"]
        let list = try ChildProcess.run(path, listing, captureOutput: true, timeout: .seconds(2))
        guard list.status == 0, !list.timedOut else { return nil }
        let types = String(decoding: list.output, as: UTF8.self).split(whereSeparator: \.isNewline).map(String.init)
        guard let type = choose(from: types) else { return nil }
        let reading = kind == .xclip ? ["-selection", selection.rawValue, "-o", "-t", type] : primary + ["--no-newline", "--type", type]
        let contents = try ChildProcess.run(path, reading, captureOutput: true, timeout: .seconds(2))
        guard contents.status == 0, !contents.timedOut else { return nil }
        return SavedClipboard(type: type, data: contents.output)
    }

    /// Puts `data` in the selection as `type`.
    static func set(_ kind: ClipboardKind, _ data: [UInt8], type: String? = nil, selection: Selection = .clipboard) throws(InsertionError) {
        switch kind {
        case .xclip:
            // xclip reads its input, then stays in the background to serve the selection.
            try Programs.run("xclip", for: purpose(kind), ["-selection", selection.rawValue, "-i"] + (type.map { ["-t", $0] } ?? []),
                             input: data)
        case .wlClipboard:
            try Programs.run("wl-copy", for: purpose(kind), (selection == .primary ? ["--primary"] : []) + (type.map { ["--type", $0] } ?? []),
                             input: data)
        }
    }

    static func textType(_ kind: ClipboardKind) -> String {
        kind == .xclip ? "UTF8_STRING" : "text/plain;charset=utf-8"
    }

    static func setText(_ kind: ClipboardKind, _ text: String, selection: Selection = .clipboard) throws(InsertionError) {
        try set(kind, Array(text.utf8), type: textType(kind), selection: selection)
    }

    /// Puts back what `save` found, or empties the selection when it held nothing.
    static func restore(_ kind: ClipboardKind, _ saved: SavedClipboard?, selection: Selection = .clipboard) throws(InsertionError) {
        if let saved {
            try set(kind, saved.data, type: saved.type, selection: selection)
        } else if kind == .wlClipboard {
            try Programs.run("wl-copy", for: purpose(kind), (selection == .primary ? ["--primary"] : []) + ["--clear"])
        } else {
            try set(kind, [], selection: selection)
        }
    }
}
