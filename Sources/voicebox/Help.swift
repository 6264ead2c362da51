/// `--help` for the command and each subcommand.
enum Help {
    static let command = """
        usage: voicebox [--address BUS] COMMAND [ARGUMENTS]
               voicebox --version

        Speech for the desktop, through voiceboxd (org.voicebox.Speech1 on the session bus).

        commands:
          say TEXT...       speak TEXT and wait until it has been spoken
          voices [LANG]     list the voices, best match for LANG first
          listen            recognize speech from the microphone or a file
          dictate           listen until the end of speech and type the text, with spoken punctuation
          insert TEXT...    type TEXT into the focused window (no service needed)
          stop [ID]         stop an utterance; stop --all stops every program's speech
          pause, resume     hold speech and let it go on
          status            whether voiceboxd runs, and what it is doing
          monitor           print every signal of the service as it comes, until interrupted

        `voicebox COMMAND --help` tells more. --json (say, voices, listen, status) prints JSON for scripts.

        exit status:
          0    done
          1    the service refused (its error is printed, one sentence)
          2    nothing was heard (listen, dictate)
          3    the text was not inserted (dictate, insert): a program is missing (the message names
               its Debian package), or there is no graphical session; the text is kept (below)
          4    the text was not inserted, or its arrival cannot be confirmed: a helper program failed
               (its own message is passed on), the window closed or lost the focus while typing, or
               did not take the paste. With 3 and 4 the text is put on the clipboard and printed on
               standard output, one line on standard error says why, and a desktop notification
               says "dictation kept on the clipboard" where the session has a notification server
          5    dictate --toggle, --stop or --cancel: another program's recognition holds the
               microphone (not a dictation); it is left alone
          64   bad usage (the message names the argument)
          69   the service (or the session bus) cannot be reached
          130  cancelled (Ctrl-C during say, listen or dictate; dictate --cancel from another process)
        monitor and pause run until interrupted, and then exit 0.
        """

    static func text(for subcommand: String?) -> String {
        switch subcommand {
        case "say": say
        case "voices": voices
        case "listen": listen
        case "stop": stop
        case "pause", "resume": pauseResume
        case "status": status
        case "monitor": monitor
        case "dictate": dictate
        case "insert": insert
        default: command
        }
    }

    static let say = """
        usage: voicebox say [OPTIONS] TEXT...
               voicebox say [OPTIONS] -        (the text from standard input)

        Speaks TEXT and waits until it has been spoken (the utterance id is printed with --no-wait or --json).
        Text longer than 64 KiB is split at sentence ends into several utterances, spoken in order;
        say waits for the last (--no-wait prints every id).
          --voice ID          a voice id from `voicebox voices` (not with --language)
          --language TAG      BCP-47: the best voice for it (e.g. en-GB)
          --rate R            1.0 normal, 0.25 ... 4.0
          --pitch P           1.0 normal, 0.5 ... 2.0
          --volume V          0 ... 1
          --priority P        message (default), important, text, notification, progress
          --ssml              TEXT is SSML
          --no-wait           return at once and print the utterance id
          --json              print {"id": N, "ids": [...]} (the last utterance, and all of them)
          --output FILE       write the speech into FILE as WAV instead of playing it (- for standard
                              output); one utterance, 64 KiB of text at most (docs/spiel.md)
        """

    static let voices = """
        usage: voicebox voices [--json] [LANG]

        Lists the voices (id, name, language, variant, tab-separated), best match for LANG first:
        "en" every English voice, "en-GB" that region, nothing all of them.
          --json              an array of {id, name, language, variant, engine}
        """

    static let listen = """
        usage: voicebox listen [OPTIONS]

        Recognizes speech from the microphone (speak after it says so; it ends 1 s after you stop)
        or from a file, and prints the text. On a terminal it shows a level meter while listening,
        or a progress bar for a file.
          --file PATH         an audio file (WAV, FLAC, Ogg, MP3...; *.raw is 16 kHz mono s16le),
                              opened by voicebox and passed open (any file name works)
          --stdin             raw audio from standard input as it comes (a pipe), read to its end:
                              e.g. parec --raw --format=s16le --rate=16000 --channels=1 | voicebox listen --stdin
          --format F          with --stdin: s16le (default) or f32le
          --rate N            with --stdin: 8000 to 48000 Hz (default 16000)
          --channels N        with --stdin: 1 to 8, mixed down (default 1)
          --grammar FILE      a JSGF grammar: only its sentences are heard
          --keyphrase PHRASE  a phrase to spot (repeat for more; not with --grammar)
          --language TAG      the recognition model's language (default en-US)
          --max-seconds N     the most audio to take (default 30 for the microphone)
          --silence-seconds N the silence after speech that ends it (default 1 for the microphone;
                              with --stdin it ends at the end of speech only when this is given)
          --partial           show the best guess so far as it changes (on a terminal)
          --json              print {text, id, confidence, duration, reason, language, words}
        Exits 2 when nothing was heard.
        """

    static let stop = """
        usage: voicebox stop [ID | --all]

        Stops utterance ID, whoever queued it (ids are in `voicebox monitor`), or with --all every
        program's speech: bind it to a "stop reading" key.
        """

    static let pauseResume = """
        usage: voicebox pause
               voicebox resume

        pause holds speech; it goes on when `voicebox resume` runs. A pause belongs to the process
        that made it and ends when it exits, so `pause` holds speech only while the command runs:
        it waits until interrupted (Ctrl-C, or SIGTERM) and then resumes. `resume` releases a pause
        this process holds (none, from a new process) and is kept for symmetry in scripts.
        """

    static let status = """
        usage: voicebox status [--json]

        Whether voiceboxd is running, its version, recognition languages and voice count, and
        whether it is speaking, paused, listening or interrupted now, and how dictation would
        insert text in this session (`typing`: ibus, xdotool, wtype, ydotool, clipboard or stdout).
        Exits 69 if it is not running, after one line saying so on standard output.
          --json              print an object with those fields ("running": false when it is not)
        """

    static let monitor = """
        usage: voicebox monitor

        Prints every signal of the service as it comes, one line each (e.g. `SpeechStarted 3`,
        `AudioInterruption began reason=speaking id=3 ...`), until interrupted.
        """

    static let dictate = """
        usage: voicebox dictate [--toggle | --start | --stop | --cancel] [OPTIONS]

        Listens on the microphone until the end of speech and types the text into the focused
        window, written as dictation: spoken punctuation ("comma", "period" or "full stop", "question
        mark", "exclamation mark", "colon", "new line", "new paragraph"; English only), then your
        replacements ($XDG_CONFIG_HOME/voicebox/replacements, default ~/.config/voicebox/replacements:
        one "phrase = replacement" a line, e.g. "voice box = Voicebox"; # starts a comment), then
        capitals at sentence starts and "i" as "I".
          --toggle            for one keyboard shortcut: the first press starts and waits; the next
                              press (another process) ends it, and the first writes what was heard
          --start / --stop    push-to-talk: press starts and waits, release (another process) ends it
          --cancel            ends the dictation in progress without output (the first exits 130)
          --literal           the words exactly as heard: no punctuation, replacements or capitals
          --output WHERE      type (the default in a graphical session; stdout outside one),
                              paste (through the clipboard, which is restored afterwards),
                              clipboard (only put there), stdout (printed)
          --typer PROGRAM     xdotool (X11), wtype (sway, Hyprland), ibus or ydotool (GNOME, KDE
                              Wayland)
          --verbose           say on standard error which way the text goes, and why
          --paste-keys KEYS   the keys that paste (default by the focused window: ctrl+v; in
                              terminals ctrl+shift+v; in xterm and rxvt shift+Insert from PRIMARY)
          --no-cue            no sounds when listening starts and ends
          --stdin             raw audio from standard input (a pipe) instead of the microphone,
                              until the end of speech; --format, --rate, --channels as for listen
          --language TAG      the recognition model's language (default en-US)
          --max-seconds N     the most audio to take (default 30; 120 with --toggle and --start)
        With --toggle and --start, pauses up to 10 s do not end the dictation; the other press does.
        While you dictate, music and videos are paused (MPRIS players) and other sounds silenced, so
        the microphone does not hear them; they come back afterwards (voiceboxd's listening-others).
        The processes find each other through the service (its DictationID), not through files;
        --toggle, --stop and --cancel act only on a dictation, never on another program's
        recognition (they say so and exit 5). Text that cannot be inserted is kept: exit 3 or 4.
        On GNOME and KDE Wayland the text is typed through the session's IBus (committed as IBus's
        emoji picker commits, your input method and what it composes left alone: see
        docs/dictation.md); without IBus, through ydotool when ydotoold runs (US key codes: other
        text is pasted), else it is left on the clipboard for Ctrl+V.
        """

    static let insert = """
        usage: voicebox insert [--output type|paste|clipboard] [--typer PROGRAM] [--paste-keys KEYS]
                               [--verbose] TEXT...

        Types TEXT into the focused window as dictate does (for scripts and tests; no service needed).
          --output type       typed (the default): xdotool on X11, wtype on sway and Hyprland,
                              IBus on GNOME and KDE Wayland (else ydotool when ydotoold runs,
                              else left on the clipboard)
          --output paste      put on the clipboard, the paste keys sent (by the window: Ctrl+V, in
                              terminals Ctrl+Shift+V, in xterm Shift+Insert from PRIMARY), the
                              window seen to take it, the selections' contents restored
          --output clipboard  only put on the clipboard
          --typer PROGRAM     xdotool, wtype, ydotool or ibus instead of the one chosen for the
                              session (ibus types only: it presses no paste keys)
          --paste-keys KEYS   e.g. ctrl+shift+v: the keys that paste, whatever the window
          --verbose           say on standard error which way the text goes, and why
        Text not inserted is kept on the clipboard and printed: exit 3 when a program it needs is
        missing (naming the Debian package) or there is no graphical session, 4 when a helper
        failed or the arrival cannot be confirmed.
        """
}
