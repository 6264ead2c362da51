import VoiceboxContract

/// What a caller is told when recognition goes wrong: the engine's and the microphone's errors
/// as `VoiceboxError`s, naming the option at fault where there is one.
enum RecognitionFault {
    static let cancelled = VoiceboxError(.cancelled, "the recognition was cancelled")

    static func describe(_ error: any Error, options: RecognizeOptions) -> VoiceboxError {
        switch error {
        case let error as VoiceboxError:
            return error
        case let error as RecognitionError:
            return describe(error, options: options)
        case let error as CaptureError:
            switch error {
            case .noMicrophone(let why):
                return .init(.noMicrophone, why)
            case .serverUnavailable(let why):
                return .init(.noMicrophone, "the sound server cannot be reached: \(why)")
            case .failed(let why):
                return .init(.failed, "the recording failed: \(why)")
            }
        case is CancellationError:
            return cancelled
        default:
            return .init(.failed, "\(error)")
        }
    }

    private static func describe(_ error: RecognitionError, options: RecognizeOptions) -> VoiceboxError {
        switch error {
        case .invalidGrammar(let why):
            // The built-in yes/no grammar refused: the model's dictionary is at fault, not the caller.
            guard options.grammar != nil else { return .engineUnavailable("the model cannot build its yes/no search: \(why)") }
            return .invalidArgument("option 'grammar' is not a usable JSGF grammar: \(why)")
        case .unsupportedLanguage(let language):
            return .init(.unsupportedLanguage, "no recognition model for '\(language)'; RecognitionLanguages lists the languages")
        case .invalidArgument(let why):
            // The one the engine finds that the options cannot: a phrase with a word it does not know.
            return .invalidArgument(options.keyphrases != nil ? "option 'keyphrases': \(why)" : why)
        case .unreadableAudio(let why):
            return .init(.unreadableFile, why)
        case .invalidStream(let why):
            return .invalidArgument("option 'stream': \(why)")
        case .engineFailure(let why):
            return .engineUnavailable("the recognizer failed: \(why)")
        }
    }
}
