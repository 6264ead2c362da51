import VoiceboxBus
import VoiceboxContract
import VoiceboxCore

/// What each method of org.voicebox.Speech1 does, one handler per declaration.
enum SpeechHandlers {
    static func all(_ gate: ServicesGate, callers: CallerSandbox, microphone: MicrophoneNotice) -> [MethodHandler] {
        [
            Speech1.speak.deferredHandler { call, text, options in
                let speech = await gate.services.speech
                let options = try SpeakOptions(optionValues(options))
                let id = try await speech.admit(text, options: options, caller: call.sender)
                guard options.wait else { return call.reply(id) }
                // Waiting for the end must not hold up the caller's next call.
                Task {
                    await call.answer { try await speech.outcome(of: id) }
                }
            },
            Speech1.stopSpeaking.handler { sender, id in
                await gate.services.speech.stopSpeaking(id, caller: sender)
                return NoReply()
            },
            Speech1.stopAllSpeaking.handler { _ in
                await gate.services.speech.stopAllSpeaking()
                return NoReply()
            },
            Speech1.pauseSpeaking.handler { sender in
                await gate.services.speech.pauseSpeaking(caller: sender)
                return NoReply()
            },
            Speech1.resumeSpeaking.handler { sender in
                await gate.services.speech.resumeSpeaking(caller: sender)
                return NoReply()
            },
            Speech1.listVoices.handler { _, language in
                try await gate.services.speech.listVoices(language: language)
            },
            Speech1.refreshVoices.handler { _ in
                await gate.services.speech.refreshVoices()
                return NoReply()
            },
            Speech1.recognize.deferredHandler { call, options in
                let recognition = await gate.services.recognition
                let recognizeOptions = try await RecognizeOptions(optionValues(options)) { await callers.sandbox(of: call.sender) }
                // Admitted in the caller's order (so a StopRecognition sent right after finds it),
                // answered from a task of its own when recognition ends.
                let pending = try await recognition.start(recognizeOptions, caller: call.sender)
                if recognizeOptions.isMicrophone {
                    microphone.announce(pending.id, caller: call.sender) {
                        do throws(VoiceboxError) { return try await pending.outcome().end.rawValue } catch { return error.kind.rawValue }
                    }
                }
                Task {
                    await call.answer {
                        let done = try await pending.outcome()
                        return RecognizeReply(text: done.result.text, details: details(done))
                    }
                }
            },
            Speech1.stopRecognition.handler { sender in
                await gate.services.recognition.stopRecognition(caller: sender)
                return NoReply()
            },
            Speech1.cancelRecognition.handler { sender in
                await gate.services.recognition.cancelRecognition(caller: sender)
                return NoReply()
            },
            Speech1.endRecognition.handler { _, id, cancel in
                await gate.services.recognition.endRecognition(id, cancel: cancel)
                return NoReply()
            },
        ]
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
