import Foundation
import VoiceboxBus
import VoiceboxContract
import VoiceboxInsertion

/// `insert TEXT`: into the focused window, as dictate does.
struct InsertRequest: Equatable {
    var text = ""
    var mode: InsertionMode = .type
    var typer: Typer?
    var pasteKeys: PasteKeys?
    /// `--verbose`: say on standard error which way the text goes, and why.
    var verbose = false
}

extension Invocation {
    static func parseInsert(_ reader: inout ArgumentReader) throws(UsageError) -> InsertRequest {
        var request = InsertRequest()
        var words: [String] = []
        while let item = reader.next() {
            switch item {
            case .operand(let word): words.append(word)
            case .flag("--output"):
                let output = try reader.value(of: "--output")
                guard let mode = InsertionMode(rawValue: output) else {
                    throw reader.error("--output takes type, paste or clipboard, not '\(output)'")
                }
                request.mode = mode
            case .flag("--typer"): request.typer = try typer(&reader)
            case .flag("--paste-keys"): request.pasteKeys = try pasteKeys(&reader)
            case .flag("--verbose"): request.verbose = true
            case .flag(let flag): throw reader.unknown(flag)
            }
        }
        guard !words.isEmpty else { throw reader.error("insert needs some text") }
        try checkTyper(request.typer, mode: request.mode, &reader)
        request.text = words.joined(separator: " ")
        return request
    }

    static func typer(_ reader: inout ArgumentReader) throws(UsageError) -> Typer {
        let name = try reader.value(of: "--typer")
        guard let typer = Typer(rawValue: name) else { throw reader.error("--typer takes xdotool, wtype, ydotool or ibus, not '\(name)'") }
        return typer
    }

    /// IBus commits text and presses no keys, so it cannot paste.
    static func checkTyper(_ typer: Typer?, mode: InsertionMode?, _ reader: inout ArgumentReader) throws(UsageError) {
        if let typer, !typer.pressesKeys, mode == .paste {
            throw reader.error("--typer \(typer.rawValue) types text and presses no keys: it cannot --output paste")
        }
    }

    static func pasteKeys(_ reader: inout ArgumentReader) throws(UsageError) -> PasteKeys {
        let text = try reader.value(of: "--paste-keys")
        guard let keys = PasteKeys(text) else {
            throw reader.error("--paste-keys takes keys such as ctrl+shift+v or shift+Insert, not '\(text)'")
        }
        return keys
    }
}

/// `insert` and dictate's outputs: text into the focused window, through VoiceboxInsertion.
/// Words are never lost: text that cannot be inserted, or whose arrival cannot be confirmed, is
/// kept (`keep`).
enum Insertion {
    /// Inserts `text`; when it cannot, keeps it and returns 3 (a program missing, no graphical
    /// session) or 4 (a helper failed, or the arrival could not be confirmed). `verbose`: the way
    /// chosen, and why, on standard error first.
    static func insert(_ text: String, mode: InsertionMode, typer: Typer?, pasteKeys: PasteKeys?, verbose: Bool = false,
                       watch: CompositionWatch? = nil) async -> ExitStatus {
        InsertionGuard.holdSignals()
        do {
            let note = try await Inserter.insert(text, mode: mode, typer: typer, pasteKeys: pasteKeys, watch: watch) { way in
                if verbose { Output.error("inserting: \(way)") }
            }
            if let note { Output.error(note) }
            return .ok
        } catch {
            let status: ExitStatus = switch error {
            case .missingProgram, .noSession: .cannotInsert
            case .failed, .unconfirmed: .notConfirmed
            case .interrupted(SIGHUP): .hangUp
            case .interrupted(SIGINT): .cancelled
            case .interrupted: .terminated
            }
            await keep(text, because: error.description)
            return status
        }
    }

    /// The text goes to the clipboard and to standard output, one line on standard error says why
    /// (the helper program's own words included), and where the session has a notification server
    /// a notification says so.
    static func keep(_ text: String, because reason: String) async {
        let why = reason.split(whereSeparator: \.isNewline).joined(separator: "; ")
        // Printed first: putting it on the clipboard may take seconds (wl-copy), printing does not.
        Output.write(text.hasSuffix("\n") ? text : text + "\n", to: 1)
        let kept: Bool
        var clipboardProblem = ""
        do {
            try Inserter.keepOnClipboard(text)
            kept = true
        } catch {
            kept = false
            clipboardProblem = error.description
        }
        if kept {
            Output.error("not inserted: \(why); the text is kept on the clipboard and printed")
        } else {
            Output.error("not inserted: \(why); the text is printed (not on the clipboard: \(clipboardProblem))")
        }
        await notify(summary: kept ? "Voicebox: dictation kept on the clipboard" : "Voicebox: dictation not inserted",
                     body: kept ? "It was not inserted: \(why). Paste it with Ctrl+V." : "It was not inserted: \(why).")
    }

    /// A desktop notification (org.freedesktop.Notifications), where the session bus has a
    /// server for it; bounded, and silent when there is none.
    static func notify(summary: String, body: String) async {
        guard let connection = try? BusConnection.session() else { return }
        let notifications = BusProxy(connection: connection, destination: DesktopNotifications.busName,
                                     path: DesktopNotifications.objectPath, interface: DesktopNotifications.interfaceName)
        let hints = VarDict(["urgency": .byte(1), "category": .string("transfer")])
        _ = try? await notifications.call(DesktopNotifications.notify, "Voicebox", 0, "edit-paste", summary, body, [], hints, -1,
                                          timeout: .seconds(1))
        await connection.close()
    }

    /// `insert TEXT`: no service needed.
    static func run(_ request: InsertRequest) async -> ExitStatus {
        await insert(request.text, mode: request.mode, typer: request.typer, pasteKeys: request.pasteKeys, verbose: request.verbose)
    }
}
