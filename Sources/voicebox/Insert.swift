import Foundation
import VoiceboxBus
import VoiceboxInsertion
import VoiceboxInterface

/// `insert` and dictate's outputs: text into the focused window, through VoiceboxInsertion.
/// Words are never lost: text that cannot be inserted, or whose arrival cannot be confirmed, is
/// kept (`keep`).
enum Insertion {
    /// Inserts `text`; when it cannot, keeps it and returns 3 (a program missing, no graphical
    /// session) or 4 (a helper failed, or the arrival could not be confirmed).
    static func insert(_ text: String, mode: InsertionMode, typer: Typer?, pasteKeys: PasteKeys?) async -> ExitStatus {
        do {
            if let note = try Inserter.insert(text, mode: mode, typer: typer, pasteKeys: pasteKeys) { Output.error(note) }
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
        let kept: Bool
        var clipboardProblem = ""
        do {
            try Inserter.keepOnClipboard(text)
            kept = true
        } catch {
            kept = false
            clipboardProblem = error.description
        }
        Output.write(text.hasSuffix("\n") ? text : text + "\n", to: 1)
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
        await insert(request.text, mode: request.mode, typer: request.typer, pasteKeys: request.pasteKeys)
    }
}
