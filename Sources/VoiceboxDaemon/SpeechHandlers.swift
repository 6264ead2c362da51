import VoiceboxContract
import VoiceboxCore

/// What each method of org.voicebox.Speech1 does: `Speech1Methods`, generated from the contract,
/// has one requirement per method, so a method without its handler here does not compile.
struct SpeechHandlers: Speech1Methods {
    let gate: ServicesGate
    let callers: CallerSandbox
    let microphone: MicrophoneNotice

    func speak(text: String, options: VarDict, caller: String) async throws -> MethodAnswer<UInt64> {
        let speech = await gate.services.speech
        let options = try SpeakOptions(Self.optionValues(options))
        let id = try await speech.admit(text, options: options, caller: caller)
        guard options.wait else { return .now(id) }
        // Waiting for the end must not hold up the caller's next call.
        return .later { try await speech.outcome(of: id) }
    }

    func stopSpeaking(id: UInt64, caller: String) async throws {
        await gate.services.speech.stopSpeaking(id, caller: caller)
    }

    func stopAllSpeaking(caller: String) async throws {
        await gate.services.speech.stopAllSpeaking()
    }

    func pauseSpeaking(caller: String) async throws {
        await gate.services.speech.pauseSpeaking(caller: caller)
    }

    func resumeSpeaking(caller: String) async throws {
        await gate.services.speech.resumeSpeaking(caller: caller)
    }

    func listVoices(language: String, caller: String) async throws -> MethodAnswer<[Voice]> {
        .now(try await gate.services.speech.listVoices(language: language))
    }

    func refreshVoices(caller: String) async throws {
        await gate.services.speech.refreshVoices()
    }

    func recognize(options: VarDict, caller: String) async throws -> MethodAnswer<Speech1.RecognizeReply> {
        let recognition = await gate.services.recognition
        let callers = callers
        let recognizeOptions = try await RecognizeOptions(Self.optionValues(options)) { await callers.sandbox(of: caller) }
        // Admitted in the caller's order (so a StopRecognition sent right after finds it),
        // answered from a task of its own when recognition ends.
        let pending = try await recognition.start(recognizeOptions, caller: caller)
        if recognizeOptions.isMicrophone {
            microphone.announce(pending.id, caller: caller) {
                do throws(VoiceboxError) { return try await pending.outcome().end.rawValue } catch { return error.kind.rawValue }
            }
        }
        return .later {
            let done = try await pending.outcome()
            return Speech1.RecognizeReply(text: done.result.text, details: Self.details(done))
        }
    }

    func stopRecognition(caller: String) async throws {
        await gate.services.recognition.stopRecognition(caller: caller)
    }

    func cancelRecognition(caller: String) async throws {
        await gate.services.recognition.cancelRecognition(caller: caller)
    }

    func endRecognition(id: UInt64, cancel: Bool, caller: String) async throws {
        await gate.services.recognition.endRecognition(id, cancel: cancel)
    }

    /// An `a{sv}` as the core's option values; other types are kept by signature, to be named
    /// in the error.
    static func optionValues(_ options: VarDict) -> [String: OptionValue] {
        options.entries.mapValues { value in
            switch value {
            case .string(let s): .string(s)
            case .double(let d): .double(d)
            case .boolean(let b): .bool(b)
            case .uint32(let u): .uint32(u)
            case .array(.string, let items): .strings(items.compactMap(\.string))
            case .unixFD(let fd): .descriptor(fd)
            default: .other(signature: value.type.signature)
            }
        }
    }

    /// Recognize's `details`.
    static func details(_ recognition: Recognition) -> VarDict {
        VarDict([
            "confidence": .double(recognition.result.confidence),
            "words": .array(.structure([.string, .double, .double]), recognition.result.words.map { word in
                .structure([.string(word.word), .double(word.start), .double(word.end)])
            }),
            "duration": .double(recognition.duration),
            "reason": .string(recognition.end.rawValue),
            "language": .string(recognition.language),
            "id": .uint64(recognition.id),
        ])
    }
}
