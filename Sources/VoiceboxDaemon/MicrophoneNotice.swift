import Glibc
import VoiceboxBus
import VoiceboxContract

/// Who is told that the microphone is on, and for whom: besides the `Listening` property, the
/// log gets a line when a caller's recognition takes the microphone and when it gives it back
/// (with the caller's unique name, process id and command), and with `--notify-microphone` the
/// desktop shows a notification for as long as it lasts.
///
/// Nothing here holds up the recognition: the notice runs beside it, and each call to the
/// notification server is bounded (`answer`: the bound bus-call); a missing or stuck server only
/// costs the notification.
struct MicrophoneNotice: Sendable {
    let connection: BusConnection
    let callers: CallerSandbox
    let notify: Bool
    let answer: Duration

    /// Announces recognition `id` of `caller` until `ended` returns.
    func announce(_ id: UInt64, caller: String, until ended: @escaping @Sendable () async -> String) {
        Task {
            let who = await callers.process(of: caller)
            Daemon.log("recognition \(id) of \(caller) (\(who?.description ?? "process unknown")) takes the microphone")
            let shown = notify ? await show(id, who: who) : nil
            let reason = await ended()
            Daemon.log("recognition \(id) of \(caller) gave the microphone back (\(reason))")
            if let shown { await close(shown) }
        }
    }

    private var notifications: BusProxy {
        BusProxy(connection: connection, destination: DesktopNotifications.busName, path: DesktopNotifications.objectPath,
                 interface: DesktopNotifications.interfaceName)
    }

    private func show(_ id: UInt64, who: CallerProcess?) async -> UInt32? {
        let body = "\(who?.command ?? "An application") is listening through Voicebox (recognition \(id))."
        // urgency 1 (normal); expire_timeout 0: it stays until closed, as long as the microphone is on.
        let hints = VarDict(["urgency": .byte(1), "category": .string("device"), "transient": .boolean(true)])
        do {
            return try await notifications.call(DesktopNotifications.notify, "Voicebox", 0, "audio-input-microphone",
                                                "Microphone on", body, [], hints, 0, timeout: answer)
        } catch {
            Daemon.log("cannot show the microphone notification: \(error.message)")
            return nil
        }
    }

    private func close(_ notification: UInt32) async {
        do {
            try await notifications.call(DesktopNotifications.closeNotification, notification, timeout: answer)
        } catch {
            Daemon.log("cannot close the microphone notification: \(error.message)")
        }
    }
}

/// A caller's process as the bus daemon reports it.
struct CallerProcess: Sendable, CustomStringConvertible {
    let pid: Int32
    /// /proc/PID/comm, when readable.
    let command: String?

    var description: String { "pid \(pid)" + (command.map { ", \($0)" } ?? "") }
}
