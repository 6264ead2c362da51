import VoiceboxBus
import VoiceboxCore

/// Recognize, StopRecognition and CancelRecognition on the bus.
extension SpeechObject {
    /// Runs in the ordered stream: Recognize is admitted here (so a StopRecognition sent right
    /// after it finds it), then answered from its own task when recognition ends.
    func handleRecognition(_ call: MethodCall, recognition: RecognitionService) async throws(VoiceboxError) {
        switch call.member {
        case "Recognize":
            let options = try RecognizeOptions(try Self.options(call.arguments[0]))
            let pending = try await recognition.start(options, caller: call.sender)
            Task {
                do throws(VoiceboxError) {
                    let done = try await pending.outcome()
                    call.reply([.string(done.result.text), Self.details(done)])
                } catch {
                    call.fail(DBusError(name: error.dbusName, message: error.message))
                }
            }
        case "StopRecognition":
            await recognition.stopRecognition(caller: call.sender)
            call.reply()
        case "CancelRecognition":
            await recognition.cancelRecognition(caller: call.sender)
            call.reply()
        default:
            call.fail(DBusError(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "no method \(call.member)"))
        }
    }

    /// Recognize's `details`.
    static func details(_ recognition: Recognition) -> DBusValue {
        .vardict([
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
