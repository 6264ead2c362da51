# fish completion for voicebox(1): its commands, their options and values, and for --voice the
# ids `voicebox voices` lists (the first column), each described by its name and language.
# Installed as /usr/share/fish/vendor_completions.d/voicebox.fish.

set -l commands say voices listen dictate insert stop pause resume status monitor help

# The first call may start the service, which waits up to 10 s for speech-dispatcher's voices.
function __voicebox_voices
    timeout 12 voicebox voices 2>/dev/null | string replace -r '^([^\t]*)\t([^\t]*)\t([^\t]*).*$' '$1\t$2 ($3)'
end

function __voicebox_voice_languages
    timeout 12 voicebox voices 2>/dev/null | cut -f 3 | sort -u
end

function __voicebox_recognition_languages
    timeout 12 voicebox status 2>/dev/null | string replace -rf '^recognition: .*languages ' '' | string split ', '
end

complete -c voicebox -f
# Before the command.
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -l address -r -d 'a D-Bus address instead of the session bus'
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -l version -d 'print the version'
complete -c voicebox -s h -l help -d usage
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -a say -d 'speak text and wait until it has been spoken'
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -a voices -d 'list the voices'
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -a listen -d 'recognize speech from the microphone, a file or standard input'
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -a dictate -d 'listen until the end of speech and type the text'
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -a insert -d 'type text into the focused window'
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -a stop -d "stop an utterance, or every program's speech"
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -a pause -d 'hold speech while this runs'
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -a resume -d "release this process's pause"
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -a status -d 'whether voiceboxd runs, and what it is doing'
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -a monitor -d 'print every signal of the service'
complete -c voicebox -n "not __fish_seen_subcommand_from $commands" -a help -d 'usage of a command'
complete -c voicebox -n "__fish_seen_subcommand_from help" -a "$commands"

# say
complete -c voicebox -n "__fish_seen_subcommand_from say" -l voice -x -a '(__voicebox_voices)' -d 'a voice id from voicebox voices'
complete -c voicebox -n "__fish_seen_subcommand_from say" -l language -x -a '(__voicebox_voice_languages)' -d 'the best voice for a BCP-47 tag'
complete -c voicebox -n "__fish_seen_subcommand_from say" -l rate -x -d 'speed, 1.0 normal (0.25-4.0)'
complete -c voicebox -n "__fish_seen_subcommand_from say" -l pitch -x -d 'pitch, 1.0 normal (0.5-2.0)'
complete -c voicebox -n "__fish_seen_subcommand_from say" -l volume -x -d 'volume (0-1)'
complete -c voicebox -n "__fish_seen_subcommand_from say" -l priority -x -a 'message important text notification progress' -d 'speech-dispatcher priority'
complete -c voicebox -n "__fish_seen_subcommand_from say" -l ssml -d 'the text is SSML'
complete -c voicebox -n "__fish_seen_subcommand_from say" -l no-wait -d 'return at once and print the utterance id'
complete -c voicebox -n "__fish_seen_subcommand_from say" -l output -r -F -d 'write the speech into a WAV file (- for standard output)'
complete -c voicebox -n "__fish_seen_subcommand_from say voices listen status" -l json -d 'print JSON'

# voices
complete -c voicebox -n "__fish_seen_subcommand_from voices" -a '(__voicebox_voice_languages)'

# listen and dictate
complete -c voicebox -n "__fish_seen_subcommand_from listen" -l file -r -F -d 'an audio file'
complete -c voicebox -n "__fish_seen_subcommand_from listen dictate" -l stdin -d 'raw audio from standard input'
complete -c voicebox -n "__fish_seen_subcommand_from listen dictate" -l format -x -a 's16le f32le' -d 'the raw audio format'
complete -c voicebox -n "__fish_seen_subcommand_from listen dictate" -l rate -x -d 'the sample rate (8000-48000)'
complete -c voicebox -n "__fish_seen_subcommand_from listen dictate" -l channels -x -d 'channels (1-8), mixed down'
complete -c voicebox -n "__fish_seen_subcommand_from listen" -l grammar -r -F -d 'a JSGF grammar'
complete -c voicebox -n "__fish_seen_subcommand_from listen" -l keyphrase -x -d 'a phrase to spot'
complete -c voicebox -n "__fish_seen_subcommand_from listen dictate" -l language -x -a '(__voicebox_recognition_languages)' -d "the recognition model's language"
complete -c voicebox -n "__fish_seen_subcommand_from listen dictate" -l max-seconds -x -d 'the most audio to take'
complete -c voicebox -n "__fish_seen_subcommand_from listen" -l silence-seconds -x -d 'the silence that ends speech (0-10)'
complete -c voicebox -n "__fish_seen_subcommand_from listen" -l partial -d 'show the best guess so far'

# dictate
complete -c voicebox -n "__fish_seen_subcommand_from dictate" -l toggle -d 'one key: press to start, press again to end'
complete -c voicebox -n "__fish_seen_subcommand_from dictate" -l start -d 'push-to-talk: the press'
complete -c voicebox -n "__fish_seen_subcommand_from dictate" -l stop -d 'push-to-talk: the release'
complete -c voicebox -n "__fish_seen_subcommand_from dictate" -l cancel -d 'end the dictation without output'
complete -c voicebox -n "__fish_seen_subcommand_from dictate" -l literal -d 'the words exactly as heard'
complete -c voicebox -n "__fish_seen_subcommand_from dictate" -l output -x -a 'type paste clipboard stdout' -d 'where the text goes'
complete -c voicebox -n "__fish_seen_subcommand_from dictate" -l no-cue -d 'no tones'

# dictate and insert
complete -c voicebox -n "__fish_seen_subcommand_from insert" -l output -x -a 'type paste clipboard' -d 'how the text goes in'
complete -c voicebox -n "__fish_seen_subcommand_from dictate insert" -l typer -x -a 'xdotool wtype ibus ydotool' -d 'the typing program'
complete -c voicebox -n "__fish_seen_subcommand_from dictate insert" -l verbose -d 'say which way the text goes, and why'
complete -c voicebox -n "__fish_seen_subcommand_from dictate insert" -l paste-keys -x -a 'ctrl+v ctrl+shift+v shift+Insert' -d 'the keys that paste'

# stop
complete -c voicebox -n "__fish_seen_subcommand_from stop" -l all -d "every program's speech"
