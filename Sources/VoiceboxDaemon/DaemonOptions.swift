import VoiceboxCore

/// voiceboxd's command line.
public struct DaemonOptions: Sendable, Equatable {
    /// A bus address; nil means the user's session bus.
    public var busAddress: String?
    /// speech-dispatcher's address ("unix_socket:/path"); nil means libspeechd's default,
    /// which honours $SPEECHD_ADDRESS.
    public var speechdAddress: String?
    /// Whether libspeechd may start speech-dispatcher when it is not running.
    public var autospawn = true
    /// What is done to a speech-dispatcher that stops speaking or answering.
    public var speechdRecovery: SpeechdRecovery = .restart
    /// Whether pocketsphinx's own messages go to stderr (voiceboxd's log), marked as debug lines.
    public var debug = false
    /// Show a desktop notification while a recognition has the microphone.
    public var notifyMicrophone = false
    /// What Speak and microphone Recognize do to other audio when the caller does not say, how
    /// far `duck` lowers it, and how long after the last utterance others stay interrupted.
    public var audio = AudioSessionSettings()
    /// How long it waits for other processes, and the delays it keeps (`--bound NAME=SECONDS`; the
    /// four options that set a bound of their own name, `--voices-wait`, `--model-idle`, `--grace`
    /// and `--call-limit`, set it here too: the last one given wins).
    public var bounds = Bounds()
    public var showVersion = false
    public var showHelp = false

    public init() {}

    public static let usage = """
        usage: voiceboxd [options]
          --address ADDRESS          serve on this bus instead of the session bus
          --speechd-address ADDRESS  speech-dispatcher's address, e.g. unix_socket:/run/user/1000/speech-dispatcher/speechd.sock
          --no-autospawn             never start speech-dispatcher; wait for it to appear
          --speechd-recovery WHAT    a speech-dispatcher that stops speaking or answering is restarted (restart,
                                     the default: if it runs as this user) or only reconnected to (reconnect)
          --voices-wait SECONDS      how long ListVoices waits for a first voice list (default 10)
          --model-idle SECONDS       free a recognition model this long after its last use (default 15)
          --speaking-others POLICY   what Speak does to other audio by default: duck (default), pause, mix
          --listening-others POLICY  what a microphone Recognize does to other audio: pause (default), duck, mix
          --duck-db DECIBELS         how far duck lowers other streams as heard, -60 ... 0 (default -15)
          --grace SECONDS            others stay interrupted this long after the last utterance (default 0.3)
          --call-limit SECONDS       a microphone recognition held by a call this long ends, reason interrupted (default 10)
          --spare-role ROLE          never pause, mute or duck streams of this media.role (a11y always; repeatable)
          --notify-microphone        show a desktop notification while a recognition has the microphone
          --bound NAME=SECONDS       change one of the bounds below (repeatable; the tests make them small)
          --debug                    log pocketsphinx's own messages too
          --version                  print the version and exit
          --help                     print this and exit
        bounds (their standard values; every wait on another process has one):
        """ + "\n" + Bounds.usage

    public init(arguments: [String]) throws(OptionError) {
        var rest = arguments[...]
        func value(_ flag: String) throws(OptionError) -> String {
            guard let next = rest.popFirst() else { throw OptionError("\(flag) needs a value") }
            return next
        }
        while let argument = rest.popFirst() {
            switch argument {
            case "--address": busAddress = try value(argument)
            case "--speechd-address": speechdAddress = try value(argument)
            case "--no-autospawn": autospawn = false
            case "--speechd-recovery":
                let text = try value(argument)
                guard let recovery = SpeechdRecovery(rawValue: text) else {
                    throw OptionError("--speechd-recovery takes restart or reconnect, not '\(text)'")
                }
                speechdRecovery = recovery
            case "--voices-wait", "--model-idle", "--grace", "--call-limit":
                // The bounds of the same names (Bounds.set: one parser, one range, for both forms).
                let text = try value(argument)
                guard let bound = Bound(rawValue: String(argument.dropFirst(2))) else { throw OptionError("no bound \(argument)") }
                do throws(BoundError) { try bounds.set(bound, seconds: text, as: argument) } catch {
                    throw OptionError(error.description)
                }
            case "--speaking-others": audio.speakingDefault = try policy(argument, try value(argument))
            case "--listening-others": audio.listeningDefault = try policy(argument, try value(argument))
            case "--duck-db":
                let text = try value(argument)
                guard let decibels = Double(text), decibels >= -60, decibels <= 0 else {
                    throw OptionError("--duck-db takes decibels between -60 and 0, not '\(text)'")
                }
                audio.duckDecibels = decibels
            case "--spare-role":
                let role = try value(argument)
                guard !role.isEmpty else { throw OptionError("--spare-role needs a role name") }
                audio.spareRoles.insert(role.lowercased())
            case "--bound":
                let text = try value(argument)
                do throws(BoundError) { try bounds.set(text) } catch { throw OptionError(error.description) }
            case "--notify-microphone": notifyMicrophone = true
            case "--debug": debug = true
            case "--version": showVersion = true
            case "--help", "-h": showHelp = true
            default: throw OptionError("unknown argument '\(argument)'")
            }
        }
        // The audio session takes these two with its settings.
        audio.grace = bounds[.grace]
        audio.listeningInterruptionLimit = bounds[.callLimit]
    }
}

private func policy(_ flag: String, _ text: String) throws(OptionError) -> OthersPolicy {
    guard let policy = OthersPolicy(rawValue: text) else {
        throw OptionError("\(flag) takes pause, duck or mix, not '\(text)'")
    }
    return policy
}

public struct OptionError: Error, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// What voiceboxd does to a speech-dispatcher that stops speaking or answering (the synthesizer's
/// `Recovery`, named here so that the options do not depend on the speech-dispatcher module).
public enum SpeechdRecovery: String, Sendable, Equatable {
    case restart, reconnect
}
