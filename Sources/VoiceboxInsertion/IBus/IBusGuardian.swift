import Glibc
import VoiceboxSpawn

/// SIGKILL cannot be caught: killed while its engine is registered, voicebox cannot put the user's
/// engine back, and ibus-daemon (1.5.27), dropping the component with the connection, sets no
/// engine at all. So a small shell outlives it for the length of the insertion: it waits on a pipe
/// from voicebox; "done" (the engine is back) ends it; the end of the pipe without it (voicebox
/// died) makes it wait until voicebox's engine connection has left IBus's bus and set the user's
/// engine again, with dbus-send (dbus-bin), waiting for the answer (sent without waiting, the call
/// was seen dropped: the daemon saw the connection close first). It ignores SIGINT, SIGTERM and SIGHUP, which voicebox
/// handles; a SIGKILL of both (the whole process group) still leaves no engine set.
final class IBusGuardian {
    private let child: Child
    private var input: Int32

    static let script = #"""
        trap '' INT TERM HUP
        IFS= read -r word || word=
        [ "$word" = done ] && exit 0
        i=0
        while [ "$i" -lt 50 ]; do
            dbus-send --address="$2" --print-reply --reply-timeout=1000 --dest=org.freedesktop.DBus /org/freedesktop/DBus \
                org.freedesktop.DBus.NameHasOwner "string:$3" 2>/dev/null | grep -q 'boolean false' && break
            sleep 0.1
            i=$((i + 1))
        done
        exec dbus-send --address="$2" --print-reply --reply-timeout=5000 --dest=org.freedesktop.IBus \
            /org/freedesktop/IBus org.freedesktop.IBus.SetGlobalEngine "string:$1" >/dev/null
        """#

    /// Starts it for the user's engine `previous` on the daemon at `address`, where our engine's
    /// connection is `engineConnection`. Nil where there is no dbus-send (then nothing outlives us).
    init?(previous: String, address: String, engineConnection: String) {
        guard let shell = Programs.lookUp("sh"), Programs.lookUp("dbus-send") != nil else { return nil }
        // This process's environment (its PATH found dbus-send); no descriptor of ours but the pipe.
        var spec = ChildSpec(shell, ["-c", Self.script, "voicebox-ibus-guardian", previous, address, engineConnection])
        spec.standardInput = .pipe
        guard let started = try? Spawn.start(spec), let input = started.input else { return nil }
        child = started.child
        self.input = input
    }

    /// The user's engine is back: the guardian ends (at once; waited for at most a second).
    func release() {
        guard input >= 0 else { return }
        _ = Spawn.writeWithoutSIGPIPE(input, Array("done\n".utf8)[...])
        close(input)
        input = -1
        _ = child.end(within: .seconds(1))
    }

    deinit {
        if input >= 0 { close(input) }
    }
}
