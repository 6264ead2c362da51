import Foundation
import VoiceboxBus
import VoiceboxContract

/// The documented exit statuses.
enum ExitStatus: Int32 {
    case ok = 0
    /// The service refused: its error is printed.
    case refused = 1
    /// listen or dictate heard nothing.
    case nothingHeard = 2
    /// The text was not inserted: a program for it is missing (the message names its package), or
    /// there is no graphical session. The text is kept: clipboard, standard output.
    case cannotInsert = 3
    /// The text was not inserted, or its arrival cannot be confirmed: a helper program failed (its
    /// message is passed on), the window closed or lost the focus while typing, or it did not take
    /// the paste. The text is kept: clipboard, standard output.
    case notConfirmed = 4
    /// A dictation shortcut (--toggle, --stop, --cancel) found the microphone held by another
    /// program's recognition, not a dictation, and left it alone.
    case microphoneBusy = 5
    case usage = 64
    /// The service or the bus cannot be reached.
    case unavailable = 69
    case cancelled = 130
    /// SIGHUP or SIGTERM while typing: typing stopped, the text is kept (clipboard, standard
    /// output), and the exit status is the signal's, as a shell shows it (SIGINT: 130).
    case hangUp = 129
    case terminated = 143
}

/// Why a subcommand ends early: one plain sentence and an exit status.
struct Failure: Error {
    var message: String
    var status: ExitStatus

    init(_ message: String, _ status: ExitStatus) {
        self.message = message
        self.status = status
    }

    /// Silent: the status says it all (a cancelled dictation prints nothing).
    static func quiet(_ status: ExitStatus) -> Failure { Failure("", status) }

    /// A D-Bus error as one sentence: the service's own message (it names what is wrong), or
    /// words for the bus's errors; never the error's name or a dump.
    init(_ error: DBusError) {
        let name = error.name
        let message = error.message.trimmingCharacters(in: .whitespacesAndNewlines)
        switch name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            self.init("voiceboxd is not running (nothing owns org.voicebox.Speech1 on this bus)", .unavailable)
        case "org.freedesktop.DBus.Error.NoReply", "org.freedesktop.DBus.Error.Timeout", "org.freedesktop.DBus.Error.TimedOut":
            self.init("voiceboxd did not answer in time", .unavailable)
        case "org.freedesktop.DBus.Error.Disconnected", "org.freedesktop.DBus.Error.NoServer",
             "org.freedesktop.DBus.Error.FileNotFound", "org.freedesktop.DBus.Error.NoNetwork":
            self.init("the session bus cannot be reached" + (message.isEmpty ? "" : ": \(message)"), .unavailable)
        case _ where name.hasPrefix("org.freedesktop.DBus.Error.Spawn"):
            self.init("voiceboxd could not be started" + (message.isEmpty ? "" : ": \(message)"), .unavailable)
        case "org.freedesktop.DBus.Error.UnknownMethod", "org.freedesktop.DBus.Error.UnknownProperty",
             "org.freedesktop.DBus.Error.UnknownInterface", "org.freedesktop.DBus.Error.UnknownObject":
            self.init("the running voiceboxd is too old for this command (update it and restart it)", .refused)
        case "org.freedesktop.DBus.Error.AccessDenied":
            self.init("the bus refused the call" + (message.isEmpty ? "" : ": \(message)"), .refused)
        case VoiceboxError.Kind.cancelled.dbusName:
            self.init(message.isEmpty ? "cancelled" : message, .cancelled)
        default:
            self.init(message.isEmpty ? Self.words(for: name) : message, .refused)
        }
    }

    /// For an error that came without a message.
    static func words(for name: String) -> String {
        switch VoiceboxError.Kind(rawValue: name.split(separator: ".").last.map(String.init) ?? name) {
        case .invalidArgument: "the service refused an argument"
        case .unknownVoice: "no such voice"
        case .unsupportedLanguage: "that language is not supported"
        case .tooLarge: "the text is too large"
        case .engineUnavailable: "the speech engine is unavailable"
        case .busy: "the microphone is busy"
        case .noMicrophone: "there is no microphone"
        case .unreadableFile: "the file cannot be read"
        default: "the service failed"
        }
    }
}
